/**
 * One visit: the timer (travel, arrive, documentation, complete, each stamped with a GPS fix
 * when the device grants one), the mileage, the SOAP draft (one textarea per section, bound
 * to the draft's Y.Doc), the checklist items the draft does not cover yet, and the note's
 * submission. Every write is local first: it shows at once and its receipt says where it is.
 */
import { InvalidWriteError, LocalNotFoundError, type FieldchartClient, type SoapSection, type Visit } from '@fieldchart/client';
import { debounce, h, messageOf, replace } from '../dom.ts';
import { clockTime, EVENT_LABEL, patientName, receiptLabel, startTime, STATUS_LABEL } from '../format.ts';
import { currentFix } from '../geo.ts';
import { bindTextarea } from '../text-binding.ts';
import { dictationSection } from './dictation.ts';

const SECTION_LABEL: Record<SoapSection, string> = { subjective: 'Subjective', objective: 'Objective', assessment: 'Assessment', plan: 'Plan' };
type EventType = keyof typeof EVENT_LABEL;
const EVENT_TYPES = Object.keys(EVENT_LABEL) as EventType[];

/** An open visit screen; `close` unbinds it from the draft and the sync events. */
export interface VisitScreen {
  close(): void;
}

function field(id: string, label: string, input: HTMLInputElement): HTMLElement {
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input);
}

const milesInput = (name: string) => h('input', { name, type: 'number', inputmode: 'decimal', min: 0, max: 2000, step: 0.1 });

/**
 * Reads the visit and its draft, then draws the screen into `main` — unless `current()` says
 * another screen was asked for meanwhile: then nothing is drawn, and the caller closes what
 * this returns.
 */
export async function openVisitScreen(client: FieldchartClient, main: HTMLElement, uuid: string, current: () => boolean): Promise<VisitScreen> {
  const visit = await client.visits.get(uuid);
  if (!current()) return { close() {} };
  if (!visit) {
    replace(main, h('p', { class: 'empty' }, 'This visit is not on this phone.'), h('a', { href: '#/' }, 'Back to visits'));
    return { close() {} };
  }
  const cleanups: Array<() => void> = [];

  const receiptEl = h('p', { id: 'receipt', class: 'receipt', role: 'status' });
  const statusEl = h('span', { id: 'visit-status' });
  const eventsEl = h('ol', { id: 'timer-events', class: 'events' });
  const timerMsg = h('p', { id: 'timer-message', role: 'status', class: 'hint' });
  const timerButtons = EVENT_TYPES.map((type) => {
    const b = h('button', { type: 'button', 'data-event': type }, EVENT_LABEL[type]);
    b.addEventListener('click', () => void recordEvent(type, b));
    return b;
  });

  async function recordEvent(type: EventType, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    timerMsg.textContent = 'Getting location…';
    try {
      const fix = await currentFix();
      const { located, ...position } = fix;
      await client.visits.recordTimerEvents(uuid, [{ event_type: type, event_time: new Date().toISOString(), ...position }]);
      timerMsg.textContent = `${EVENT_LABEL[type]} recorded${located ? '' : ' without a location (no GPS fix)'}.`;
    } catch (err) {
      timerMsg.textContent = err instanceof InvalidWriteError ? `Not recorded: ${err.message}` : messageOf(err);
    } finally {
      button.disabled = false;
    }
  }

  const total = milesInput('total_miles');
  const travel = milesInput('travel_miles');
  const onsite = milesInput('onsite_miles');
  total.required = true;
  const mileageMsg = h('p', { id: 'mileage-message', role: 'status', class: 'hint' });
  const mileageForm = h(
    'form',
    { id: 'mileage', 'aria-labelledby': 'mileage-title' },
    h('h2', { id: 'mileage-title' }, 'Mileage'),
    h('div', { class: 'row' }, field('total-miles', 'Total miles', total), field('travel-miles', 'Travel miles', travel), field('onsite-miles', 'On-site miles', onsite)),
    h('button', { type: 'submit' }, 'Save mileage'),
    mileageMsg,
  );
  const num = (i: HTMLInputElement) => (i.value === '' ? undefined : Number(i.value));
  mileageForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const body = { total_miles: Number(total.value), travel_miles: num(travel), onsite_miles: num(onsite) };
    if ((body.travel_miles ?? 0) + (body.onsite_miles ?? 0) > body.total_miles + 1e-9) {
      mileageMsg.textContent = 'Total miles must be at least travel plus on-site miles.';
      return;
    }
    client.visits.setMileage(uuid, body).then(
      () => (mileageMsg.textContent = 'Mileage saved.'),
      (err: unknown) => (mileageMsg.textContent = messageOf(err)),
    );
  });

  const doc = await client.drafts.open(uuid);
  cleanups.push(() => void client.drafts.close(uuid));
  const gapsEl = h('div', { id: 'checklist', 'aria-live': 'polite' });
  const refreshGaps = debounce(() => {
    client.checklists.forVisit(uuid).then(
      (c) =>
        replace(
          gapsEl,
          c.missing.length
            ? h('ul', { class: 'gaps' }, ...c.missing.map((i) => h('li', { 'data-item': i.id }, h('strong', {}, i.label), ` — ${i.prompt}`)))
            : h('p', { class: 'ok' }, 'Every checklist item is covered.'),
        ),
      (err: unknown) => replace(gapsEl, h('p', { class: 'hint' }, err instanceof LocalNotFoundError ? 'No documentation checklist for this visit.' : messageOf(err))),
    );
  }, 300);
  const sections = client.drafts.sections.map((s) => {
    const area = h('textarea', { id: `soap-${s}`, name: s, rows: 4, spellcheck: true });
    cleanups.push(bindTextarea(area, doc.getText(s), () => {
      refreshGaps();
      void refreshReceipt();
    }));
    return h('div', { class: 'field' }, h('label', { for: `soap-${s}` }, SECTION_LABEL[s]), area);
  });

  const dictation = dictationSection(client, uuid, doc);
  cleanups.push(dictation.close);

  const submitMsg = h('p', { id: 'submit-message', role: 'status', class: 'hint' });
  const submit = h('button', { type: 'button', id: 'submit-note' }, 'Submit note');
  submit.addEventListener('click', () => {
    const empty = client.drafts.sections.filter((s) => doc.getText(s).toString().trim() === '');
    if (empty.length) {
      submitMsg.textContent = `Fill in ${empty.map((s) => SECTION_LABEL[s]).join(', ')} first.`;
      return;
    }
    client.notes.submit(uuid).then(
      () => (submitMsg.textContent = 'Note submitted; it goes to the server when online.'),
      (err: unknown) => (submitMsg.textContent = messageOf(err)),
    );
  });

  async function refreshReceipt(): Promise<void> {
    const r = receiptLabel(await client.visits.receipt(uuid));
    receiptEl.textContent = r.text ? `Changes: ${r.text.toLowerCase()}` : 'No changes made on this phone.';
    receiptEl.setAttribute('data-receipt', r.kind);
  }

  function showVisit(v: Visit): void {
    statusEl.textContent = STATUS_LABEL[v.status];
    replace(eventsEl, ...v.timer_events.map((e) => h('li', { 'data-event': e.event_type }, `${EVENT_LABEL[e.event_type]} at ${clockTime(e.event_time)}`)));
    // The form keeps what the clinician is typing; it shows the stored figures otherwise.
    if (v.mileage && !mileageForm.contains(document.activeElement)) {
      total.value = String(v.mileage.total_miles);
      travel.value = v.mileage.travel_miles === null ? '' : String(v.mileage.travel_miles);
      onsite.value = v.mileage.onsite_miles === null ? '' : String(v.mileage.onsite_miles);
    }
  }

  const reload = debounce(() => {
    void client.visits.get(uuid).then((v) => v && showVisit(v));
    void refreshReceipt();
  }, 100);
  cleanups.push(client.sync.on('change', reload));
  cleanups.push(client.sync.on('ack', (a) => a.scheduleUuid === uuid && reload()));
  const screen: VisitScreen = {
    close() {
      for (const c of cleanups) c();
    },
  };
  if (!current()) return screen;

  replace(
    main,
    h('p', {}, h('a', { href: '#/', id: 'back' }, '← All visits')),
    h(
      'header',
      { class: 'visit-header' },
      h('h1', { id: 'visit-title', tabindex: -1 }, patientName(visit)),
      h('p', {}, `${startTime(visit)} · ${visit.visit_type} · `, statusEl),
      visit.address ? h('p', { class: 'hint' }, visit.address) : null,
      receiptEl,
    ),
    h('section', { 'aria-labelledby': 'timer-title' }, h('h2', { id: 'timer-title' }, 'Visit timer'), h('div', { class: 'buttons' }, ...timerButtons), timerMsg, eventsEl),
    mileageForm,
    h('section', { 'aria-labelledby': 'draft-title' }, h('h2', { id: 'draft-title' }, 'SOAP note'), ...sections),
    dictation.element,
    h('section', { 'aria-labelledby': 'checklist-title' }, h('h2', { id: 'checklist-title' }, 'Checklist gaps'), gapsEl),
    h('section', { 'aria-labelledby': 'submit-title' }, h('h2', { id: 'submit-title', class: 'visually-hidden' }, 'Submit'), submit, submitMsg),
  );
  showVisit(visit);
  await refreshReceipt();
  if (!current()) return screen;
  refreshGaps();
  main.setAttribute('data-rendered', 'visit');
  document.getElementById('visit-title')?.focus();
  return screen;
}
