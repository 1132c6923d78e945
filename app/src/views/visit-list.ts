/**
 * Today's and upcoming visits, read from the device database (so the list shows offline and
 * at once on start), each with its receipt: "On this phone" while some change exists only
 * here, "On the server" once every write about it was acknowledged. Also the day's route,
 * planned on the device.
 */
import { localDate, startMark, type FieldchartClient, type Visit, type VisitReceipt } from '@fieldchart/client';
import { h, messageOf, replace } from '../dom.ts';
import { dayLabel, patientName, receiptLabel, startTime, STATUS_LABEL } from '../format.ts';

/** Every visit's receipt, read once for the whole list (one query each per visit was most of a start). */
type Receipts = ReadonlyMap<string, VisitReceipt>;

function visitItem(receipts: Receipts, v: Visit): HTMLLIElement {
  const receipt = receiptLabel(receipts.get(v.uuid) ?? { scheduleUuid: v.uuid, state: 'none', pendingMutations: 0, draftOnDeviceOnly: false, lastAcknowledgedAt: null });
  return h(
    'li',
    { class: 'visit', 'data-visit': v.uuid },
    h(
      'a',
      { href: `#/visit/${v.uuid}` },
      h('span', { class: 'visit-time' }, startTime(v)),
      h('span', { class: 'visit-name' }, patientName(v)),
      h('span', { class: `visit-status status-${v.status}` }, STATUS_LABEL[v.status]),
      receipt.text ? h('span', { class: `receipt receipt-${receipt.kind}`, 'data-receipt': receipt.kind }, receipt.text) : null,
    ),
  );
}

function section(receipts: Receipts, id: string, title: string, visits: Visit[], empty: string, withDates: boolean): HTMLElement {
  const items: HTMLElement[] = [];
  let lastDate = '';
  for (const v of visits) {
    if (withDates && v.visit_date !== lastDate) {
      lastDate = v.visit_date;
      items.push(h('li', { class: 'day', role: 'presentation' }, dayLabel(v.visit_date)));
    }
    items.push(visitItem(receipts, v));
  }
  return h(
    'section',
    { 'aria-labelledby': `${id}-title` },
    h('h2', { id: `${id}-title` }, title),
    visits.length ? h('ul', { id, class: 'visits' }, ...items) : h('p', { id, class: 'empty' }, empty),
  );
}

/** `client` null: the kept first screen, shown before the device database is open (the button waits for it). */
function routeSection(client: FieldchartClient | null, today: Visit[]): HTMLElement {
  const out = h('div', { id: 'route', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', id: 'plan-route', class: 'secondary' }, "Plan today's route");
  if (!client) button.setAttribute('disabled', '');
  else button.addEventListener('click', () => {
    const date = today[0]?.visit_date;
    if (!date) return;
    client.visits.planDay(date).then(
      (plan) => {
        const byId = new Map(today.map((v) => [v.uuid, v]));
        replace(
          out,
          h('ol', { class: 'route' }, ...plan.visits.map((stop) => {
            const v = byId.get(stop.schedule_uuid);
            return h('li', {}, `${stop.suggested_start_time} ${v ? patientName(v) : ''} — ${stop.drive_minutes} min, ${stop.drive_miles} mi`);
          })),
          h('p', {}, `${plan.total_drive_minutes} min and ${plan.total_miles} mi of driving; ${plan.savings.minutes} min saved against the current order.`),
          plan.unrouted.length ? h('p', {}, `${plan.unrouted.length} visit(s) without a known location are not placed.`) : null,
        );
      },
      (err: unknown) => replace(out, h('p', { class: 'error' }, messageOf(err))),
    );
  });
  return h('section', { 'aria-labelledby': 'route-title' }, h('h2', { id: 'route-title' }, "Today's route"), button, out);
}

/**
 * A performance mark at the first rendered visit list of the page (navigation start is 0): what
 * bench/app-cold-start.ts reads, and what real-user monitoring would.
 */
export const VISIT_LIST_MARK = 'fieldchart:visit-list';
/** The first visit list rendered from the device database itself (after the kept first screen, if any). */
export const VISIT_LIST_DB_MARK = 'fieldchart:visit-list-db';

/** What the list shows: all of it read from the device database, for the day it was read on. */
export interface VisitListData {
  readonly date: string;
  readonly today: Visit[];
  readonly upcoming: Visit[];
  readonly receipts: VisitReceipt[];
}

/** The list's data from the device database; null when signed out (nothing to show or keep). */
export async function readVisitList(client: FieldchartClient): Promise<VisitListData | null> {
  if (!client.sync.status.signedIn) return null;
  const date = localDate(new Date());
  const [today, upcoming, receipts] = await Promise.all([client.visits.today({ date }), client.visits.upcoming({ after: date, days: 14 }), client.visits.receipts()]);
  return { date, today, upcoming, receipts };
}

/**
 * Reads the list from the device database and renders it into `main`, unless `current()` says
 * another screen was asked for meanwhile; re-rendered by the caller when the device's data
 * changes. The read is the client's first screen: kept (sealed) for the next start, and kept up
 * to date by the client after every write.
 */
export async function renderVisitList(client: FieldchartClient, main: HTMLElement, current: () => boolean): Promise<void> {
  const data = await client.firstScreen.read(() => readVisitList(client));
  if (!data || !current()) return;
  showVisitList(main, data, client);
  startMark(VISIT_LIST_DB_MARK);
}

/** Renders `data` into `main`; `client` null for the kept first screen at start (no actions yet). */
export function showVisitList(main: HTMLElement, data: VisitListData, client: FieldchartClient | null): void {
  const { today, upcoming } = data;
  const receipts = new Map(data.receipts.map((r) => [r.scheduleUuid, r]));
  const parts = [
    section(receipts, 'today', 'Today', today, 'No visits today.', false),
    section(receipts, 'upcoming', 'Upcoming', upcoming, 'Nothing scheduled in the next two weeks.', true),
  ];
  // A re-render (sync brought something) keeps the keyboard where it was.
  const focused = (document.activeElement as HTMLElement | null)?.closest('[data-visit]')?.getAttribute('data-visit');
  replace(main, ...parts, today.length > 1 ? routeSection(client, today) : null);
  main.toggleAttribute('data-first-screen', client === null);
  if (focused) main.querySelector<HTMLElement>(`[data-visit="${CSS.escape(focused)}"] a`)?.focus();
  main.setAttribute('data-rendered', 'visit-list');
  startMark(VISIT_LIST_MARK);
}
