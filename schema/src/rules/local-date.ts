/**
 * Calendar dates and wall-clock times in a time zone, pure (the caller passes `now`): the server
 * (reports, feeds, scheduling) and the device ("today" of the offline views) must agree on
 * which day an instant falls on.
 */

const dateFormats = new Map<string, Intl.DateTimeFormat>();
const instantFormats = new Map<string, Intl.DateTimeFormat>();
const timeFormats = new Map<string, Intl.DateTimeFormat>();

/** Formatters are costly to build; cached per zone. The device's own zone (undefined) is not
 *  cached, since a phone's zone changes while the app runs. */
function formatFor(
  cache: Map<string, Intl.DateTimeFormat>,
  locale: string,
  timeZone: string | undefined,
  options: Intl.DateTimeFormatOptions,
): Intl.DateTimeFormat {
  if (timeZone === undefined) return new Intl.DateTimeFormat(locale, options);
  let f = cache.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat(locale, { timeZone, ...options });
    cache.set(timeZone, f);
  }
  return f;
}

/** The calendar date (YYYY-MM-DD) at `now` in `timeZone` (the runtime's zone when omitted). */
export function localDate(now: Date, timeZone?: string): string {
  const parts = formatFor(dateFormats, 'en-CA', timeZone, { year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

/** The wall-clock time (HH:MM, 00:00–23:59) at `now` in `timeZone`. */
export function localTime(now: Date, timeZone: string): string {
  const parts = formatFor(timeFormats, 'en-US', timeZone, { hourCycle: 'h23', hour: '2-digit', minute: '2-digit' }).formatToParts(now);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('hour')}:${get('minute')}`;
}

/**
 * Whether the wall-clock `date` `time` happens in `timeZone`: false inside a daylight-saving gap
 * (2026-03-08 02:30 in America/New_York), where `zonedInstant` lands on a different wall time.
 */
export function wallTimeExists(date: string, time: string, timeZone: string): boolean {
  const instant = zonedInstant(date, time, timeZone);
  return localDate(instant, timeZone) === date && localTime(instant, timeZone) === time;
}

/** The instant a wall-clock date and time in `timeZone` denote (DST-correct). */
export function zonedInstant(date: string, time: string, timeZone: string): Date {
  const naive = new Date(`${date}T${time}:00Z`);
  // The zone's offset at that moment, found by formatting the naive instant in the zone.
  const fmt = formatFor(instantFormats, 'en-US', timeZone, {
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const offsetAt = (d: Date) => {
    const p = Object.fromEntries(fmt.formatToParts(d).map((x) => [x.type, x.value]));
    const asUtc = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
    return asUtc - d.getTime();
  };
  const guess = new Date(naive.getTime() - offsetAt(naive));
  return new Date(naive.getTime() - offsetAt(guess));
}

/** The calendar date `days` after `date` (both YYYY-MM-DD; negative goes back). */
export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** Monday of the week holding `date`. */
export function weekStart(date: string): string {
  const dow = new Date(`${date}T00:00:00Z`).getUTCDay(); // 0 = Sunday
  return addDays(date, -((dow + 6) % 7));
}
