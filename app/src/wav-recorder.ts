/**
 * Dictation from the microphone as a WAV file (16-bit PCM, mono): the AI pipeline takes m4a,
 * wav or mp3, and a browser's MediaRecorder writes none of them (WebM/Opus in Chromium), so the
 * samples are taken from the Web Audio graph and written as PCM.
 */
export interface Recording {
  /** Stops the microphone; answers the WAV and its length. */
  stop(): Promise<{ wav: Blob; seconds: number }>;
}

/** Starts recording; rejects when the microphone is refused or missing. */
export async function startRecording(): Promise<Recording> {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
  const context = new AudioContext();
  const source = context.createMediaStreamSource(stream);
  // ScriptProcessorNode is deprecated but needs no separate worklet module (the page's content
  // policy allows only its own scripts, and one file keeps the shell small).
  const processor = context.createScriptProcessor(4096, 1, 1);
  const chunks: Float32Array[] = [];
  processor.onaudioprocess = (e) => chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
  source.connect(processor);
  processor.connect(context.destination);
  return {
    async stop() {
      processor.disconnect();
      source.disconnect();
      for (const t of stream.getTracks()) t.stop();
      const rate = context.sampleRate;
      await context.close();
      const samples = chunks.reduce((n, c) => n + c.length, 0);
      return { wav: encodeWav(chunks, samples, rate), seconds: samples / rate };
    },
  };
}

/** RIFF/WAVE, PCM 16-bit little-endian, one channel. */
export function encodeWav(chunks: readonly Float32Array[], samples: number, rate: number): Blob {
  const buffer = new ArrayBuffer(44 + samples * 2);
  const view = new DataView(buffer);
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) view.setUint8(at + i, s.charCodeAt(i));
  };
  ascii(0, 'RIFF');
  view.setUint32(4, 36 + samples * 2, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, rate, true);
  view.setUint32(28, rate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  ascii(36, 'data');
  view.setUint32(40, samples * 2, true);
  let at = 44;
  for (const chunk of chunks) {
    for (const x of chunk) {
      const s = Math.max(-1, Math.min(1, x));
      view.setInt16(at, s < 0 ? s * 0x8000 : s * 0x7fff, true);
      at += 2;
    }
  }
  return new Blob([buffer], { type: 'audio/wav' });
}
