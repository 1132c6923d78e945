/**
 * Dictation and the AI suggestion on the visit screen: record, hand the recording to the
 * client library (`client.dictations`), which keeps it encrypted on this phone — across reloads,
 * offline — and uploads it when the server is reachable; show where each recording is (on this
 * phone, uploading n %, on the server); once the run is on the server, show the generated note
 * section by section, each with a button that adds it to the draft (the clinician decides;
 * nothing is applied by itself). The note comes through the sync feed; while the feed has not
 * brought it, the run's status is polled as before.
 */
import type { AiStatus, Dictation, FieldchartClient, SoapSection } from '@fieldchart/client';
import type * as Y from 'yjs';
import { h, messageOf, replace } from '../dom.ts';
import { startRecording, type Recording } from '../recorder.ts';

const SECTION_LABEL: Record<SoapSection, string> = { subjective: 'Subjective', objective: 'Objective', assessment: 'Assessment', plan: 'Plan' };
const POLL_MS = 2_000;

/** Where a recording is, in the clinician's words. */
export function dictationLabel(d: Dictation): string {
  switch (d.state) {
    case 'on_device':
      return 'On this phone';
    case 'uploading':
      return `Uploading ${d.bytes > 0 ? Math.floor((100 * d.sentBytes) / d.bytes) : 0} %`;
    case 'uploaded':
      return 'Uploaded; starting the note';
    case 'on_server':
      return 'On the server';
    case 'rejected':
      return `Refused by the server: ${d.lastError?.message ?? 'unknown reason'}`;
  }
}

/** The section element and its cleanup. */
export function dictationSection(client: FieldchartClient, uuid: string, doc: Y.Doc): { element: HTMLElement; close(): void } {
  const message = h('p', { id: 'dictation-message', role: 'status', class: 'hint' });
  const states = h('ul', { id: 'dictation-state', 'aria-live': 'polite', class: 'receipts' });
  const suggestion = h('div', { id: 'suggestion', 'aria-live': 'polite' });
  const record = h('button', { type: 'button', id: 'record', 'aria-pressed': 'false' }, 'Record dictation');
  let recording: Recording | null = null;
  let closed = false;
  let poll: ReturnType<typeof setTimeout> | null = null;
  let ticker: ReturnType<typeof setInterval> | null = null;
  /** The run whose suggestion is on screen (or being polled): shown once, so accepted buttons stay as they are. */
  let shown: string | null = null;
  let following: string | null = null;
  const stopTicker = () => {
    if (ticker) clearInterval(ticker);
    ticker = null;
  };

  async function refresh(): Promise<void> {
    if (closed) return;
    const list = await client.dictations.list(uuid);
    replace(
      states,
      ...list.map((d, i) => h('li', { 'data-dictation': d.id, 'data-state': d.state }, `Dictation ${i + 1}: ${dictationLabel(d)}`)),
    );
    const latest = [...list].reverse().find((d) => d.transcriptionUuid);
    if (!latest?.transcriptionUuid || shown === latest.transcriptionUuid) return;
    if (latest.suggestion && latest.suggestion.status !== 'processing') {
      shown = latest.transcriptionUuid;
      show(latest.suggestion);
    } else if (following !== latest.transcriptionUuid) {
      message.textContent = 'Dictation on the server; the note suggestion is being prepared…';
      follow(latest.transcriptionUuid);
    }
  }
  // At most one re-read per 150 ms, also while progress events keep coming (not after the last one).
  let scheduled = false;
  const refreshSoon = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      void refresh().catch(() => undefined);
    }, 150);
  };
  const unsubscribe = [client.dictations.on(refreshSoon), client.sync.on('change', refreshSoon)];
  void refresh().catch(() => undefined);

  function follow(id: string): void {
    following = id;
    if (poll) clearTimeout(poll);
    const check = () => {
      if (closed || following !== id || shown === id) return;
      client.rest.ai.status(id).then(
        (s) => {
          if (s.status === 'processing') poll = setTimeout(check, POLL_MS);
          else if (shown !== id) {
            shown = id;
            show(s);
          }
        },
        () => (poll = setTimeout(check, POLL_MS)),
      );
    };
    check();
  }

  function show(s: AiStatus): void {
    if (s.status === 'failed' || !s.generated_soap) {
      message.textContent = `No suggestion: ${s.error_message ?? 'the run failed'}`;
      return;
    }
    const soap = s.generated_soap;
    message.textContent = 'Suggestion ready: add the sections you agree with.';
    replace(
      suggestion,
      ...client.drafts.sections
        .filter((section) => soap[section].trim() !== '')
        .map((section) => {
          const accept = h('button', { type: 'button', class: 'secondary', 'data-accept': section }, `Add to ${SECTION_LABEL[section]}`);
          accept.addEventListener('click', () => {
            const text = doc.getText(section);
            text.insert(text.length, `${text.length > 0 ? '\n' : ''}${soap[section].trim()}`);
            accept.disabled = true;
            accept.textContent = `Added to ${SECTION_LABEL[section]}`;
          });
          return h('div', { class: 'suggestion', 'data-section': section }, h('h3', {}, SECTION_LABEL[section]), h('p', {}, soap[section]), accept);
        }),
    );
  }

  record.addEventListener('click', () => {
    if (!recording) {
      startRecording().then(
        (r) => {
          recording = r;
          record.textContent = 'Stop recording';
          record.setAttribute('aria-pressed', 'true');
          const started = Date.now();
          message.textContent = 'Recording… 0 s';
          ticker = setInterval(() => (message.textContent = `Recording… ${Math.floor((Date.now() - started) / 1000)} s`), 1000);
        },
        (err: unknown) => (message.textContent = `The microphone could not be used: ${messageOf(err)}`),
      );
      return;
    }
    const r = recording;
    recording = null;
    stopTicker();
    record.textContent = 'Record dictation';
    record.setAttribute('aria-pressed', 'false');
    void r
      .stop()
      .then(async ({ audio, seconds }) => {
        await client.dictations.add(uuid, audio);
        message.textContent = `Recorded ${Math.round(seconds)} s (${r.format}, ${Math.max(1, Math.round(audio.size / 1024))} KB); kept on this phone until the server has it.`;
      })
      .catch((err: unknown) => (message.textContent = `The dictation could not be kept: ${messageOf(err)}`));
  });

  return {
    element: h('section', { 'aria-labelledby': 'dictation-title' }, h('h2', { id: 'dictation-title' }, 'Dictation and AI suggestion'), record, message, states, suggestion),
    close() {
      closed = true;
      stopTicker();
      if (poll) clearTimeout(poll);
      for (const off of unsubscribe) off();
      void recording?.stop();
    },
  };
}
