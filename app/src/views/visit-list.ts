/**
 * Today's and upcoming visits, read from the device database (so the list shows offline and
 * at once on start), each with its receipt: "On this phone" while some change exists only
 * here, "On the server" once every write about it was acknowledged. Also the day's route,
 * planned on the device.
 */
import type { FieldchartClient, Visit } from '@fieldchart/client';
import { h, messageOf, replace } from '../dom.ts';
import { dayLabel, patientName, receiptLabel, startTime, STATUS_LABEL } from '../format.ts';

async function visitItem(client: FieldchartClient, v: Visit): Promise<HTMLLIElement> {
  const receipt = receiptLabel(await client.visits.receipt(v.uuid));
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

async function section(client: FieldchartClient, id: string, title: string, visits: Visit[], empty: string, withDates: boolean): Promise<HTMLElement> {
  const items: HTMLElement[] = [];
  let lastDate = '';
  for (const v of visits) {
    if (withDates && v.visit_date !== lastDate) {
      lastDate = v.visit_date;
      items.push(h('li', { class: 'day', role: 'presentation' }, dayLabel(v.visit_date)));
    }
    items.push(await visitItem(client, v));
  }
  return h(
    'section',
    { 'aria-labelledby': `${id}-title` },
    h('h2', { id: `${id}-title` }, title),
    visits.length ? h('ul', { id, class: 'visits' }, ...items) : h('p', { id, class: 'empty' }, empty),
  );
}

function routeSection(client: FieldchartClient, today: Visit[]): HTMLElement {
  const out = h('div', { id: 'route', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', id: 'plan-route', class: 'secondary' }, "Plan today's route");
  button.addEventListener('click', () => {
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

/** Renders into `main`; re-rendered by the caller when the device's data changes. */
export async function renderVisitList(client: FieldchartClient, main: HTMLElement): Promise<void> {
  const [today, upcoming] = await Promise.all([client.visits.today(), client.visits.upcoming({ days: 14 })]);
  const parts = await Promise.all([
    section(client, 'today', 'Today', today, 'No visits today.', false),
    section(client, 'upcoming', 'Upcoming', upcoming, 'Nothing scheduled in the next two weeks.', true),
  ]);
  // A re-render (sync brought something) keeps the keyboard where it was.
  const focused = (document.activeElement as HTMLElement | null)?.closest('[data-visit]')?.getAttribute('data-visit');
  replace(main, ...parts, today.length > 1 ? routeSection(client, today) : null);
  if (focused) main.querySelector<HTMLElement>(`[data-visit="${CSS.escape(focused)}"] a`)?.focus();
  main.setAttribute('data-rendered', 'visit-list');
  if (performance.getEntriesByName(VISIT_LIST_MARK).length === 0) performance.mark(VISIT_LIST_MARK);
}
