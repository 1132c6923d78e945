/**
 * Dictation from the microphone in a format the AI pipeline takes (m4a, wav or mp3). Where the
 * browser's MediaRecorder writes MP4 audio (Chromium, Safari), it records that: an m4a (Opus or
 * AAC inside) is about a seventh of the 16-bit PCM of the same minutes, on the phone's storage
 * and over its upload. Where it writes only WebM or Ogg (Firefox), the samples are taken from
 * the Web Audio graph and written as WAV.
 */
export interface Recording {
  /** `m4a` (MediaRecorder) or `wav` (Web Audio). */
  readonly format: 'm4a' | 'wav';
  /** Stops the microphone; answers the recording and its length. */
  stop(): Promise<{ audio: Blob; seconds: number }>;
}

/** The MediaRecorder type that writes an m4a here, or null. */
export function mp4AudioType(): string | null {
  if (typeof MediaRecorder === 'undefined' || typeof MediaRecorder.isTypeSupported !== 'function') return null;
  return ['audio/mp4;codecs=mp4a.40.2', 'audio/mp4;codecs=opus', 'audio/mp4'].find((t) => MediaRecorder.isTypeSupported(t)) ?? null;
}

/** Starts recording; rejects when the microphone is refused or missing. */
export async function startRecording(): Promise<Recording> {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
  const type = mp4AudioType();
  return type ? recordMp4(stream, type) : recordWav(stream);
}

function recordMp4(stream: MediaStream, mimeType: string): Recording {
  const recorder = new MediaRecorder(stream, { mimeType });
  const parts: Blob[] = [];
  recorder.addEventListener('dataavailable', (e) => {
    if (e.data.size > 0) parts.push(e.data);
  });
  // A part a second: a recording stopped by a closed tab or a crash loses at most its last second.
  recorder.start(1000);
  const started = performance.now();
  return {
    format: 'm4a',
    async stop() {
      const stopped = new Promise<void>((resolve) => recorder.addEventListener('stop', () => resolve(), { once: true }));
      if (recorder.state !== 'inactive') recorder.stop();
      await stopped;
      for (const t of stream.getTracks()) t.stop();
      return { audio: new Blob(parts, { type: recorder.mimeType || mimeType }), seconds: (performance.now() - started) / 1000 };
    },
  };
}

function recordWav(stream: MediaStream): Recording {
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
    format: 'wav',
    async stop() {
      processor.disconnect();
      source.disconnect();
      for (const t of stream.getTracks()) t.stop();
      const rate = context.sampleRate;
      await context.close();
      const samples = chunks.reduce((n, c) => n + c.length, 0);
      return { audio: encodeWav(chunks, samples, rate), seconds: samples / rate };
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
