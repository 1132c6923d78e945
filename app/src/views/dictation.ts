/**
 * Dictation and the AI suggestion on the visit screen: record, upload to `POST /ai/process-audio`
 * when online (a recording made offline waits in memory for the network, and is lost if the
 * page is closed first), follow the run's status, then show the generated note section by
 * section, each with a button that adds it to the draft (the clinician decides; nothing is
 * applied by itself).
 */
import type { AiStatus, FieldchartClient, SoapSection } from '@fieldchart/client';
import type * as Y from 'yjs';
import { h, messageOf, replace } from '../dom.ts';
import { startRecording, type Recording } from '../wav-recorder.ts';

const SECTION_LABEL: Record<SoapSection, string> = { subjective: 'Subjective', objective: 'Objective', assessment: 'Assessment', plan: 'Plan' };
const POLL_MS = 2_000;

/** The section element and its cleanup. */
export function dictationSection(client: FieldchartClient, uuid: string, doc: Y.Doc): { element: HTMLElement; close(): void } {
  const message = h('p', { id: 'dictation-message', role: 'status', class: 'hint' });
  const suggestion = h('div', { id: 'suggestion', 'aria-live': 'polite' });
  const record = h('button', { type: 'button', id: 'record', 'aria-pressed': 'false' }, 'Record dictation');
  let recording: Recording | null = null;
  let waiting: Blob | null = null;
  let closed = false;
  let poll: ReturnType<typeof setTimeout> | null = null;
  let ticker: ReturnType<typeof setInterval> | null = null;
  const stopTicker = () => {
    if (ticker) clearInterval(ticker);
    ticker = null;
  };

  const upload = async (wav: Blob) => {
    waiting = null;
    message.textContent = 'Uploading the dictation…';
    try {
      const { discipline } = await client.checklists.forVisit(uuid);
      const form = new FormData();
      form.append('schedule_uuid', uuid);
      form.append('discipline', discipline);
      form.append('encounter_type', 'daily_note');
      form.append('audio', wav, 'dictation.wav');
      const { transcription_uuid } = await client.rest.ai.processAudio(form);
      message.textContent = 'Dictation uploaded; the note suggestion is being prepared…';
      follow(transcription_uuid);
    } catch (err) {
      waiting = wav;
      message.textContent = `Not uploaded (${messageOf(err)}); it is tried again when online.`;
    }
  };
  const onOnline = () => {
    if (waiting) void upload(waiting);
  };
  window.addEventListener('online', onOnline);

  function follow(id: string): void {
    const check = () => {
      if (closed) return;
      client.rest.ai.status(id).then(
        (s) => {
          if (s.status === 'processing') poll = setTimeout(check, POLL_MS);
          else show(s);
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
    void r.stop().then(({ wav, seconds }) => {
      if (navigator.onLine) void upload(wav);
      else {
        waiting = wav;
        message.textContent = `Recorded ${Math.round(seconds)} s; it uploads when you are back online (keep this page open).`;
      }
    });
  });

  return {
    element: h('section', { 'aria-labelledby': 'dictation-title' }, h('h2', { id: 'dictation-title' }, 'Dictation and AI suggestion'), record, message, suggestion),
    close() {
      closed = true;
      stopTicker();
      if (poll) clearTimeout(poll);
      window.removeEventListener('online', onOnline);
      void recording?.stop();
    },
  };
}
