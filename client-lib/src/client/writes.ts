/**
 * Local writes: the contract's check of the arguments on the device (so an obviously invalid
 * write is refused at once, not queued to be rejected later), then one local transaction that
 * appends the write to the outbox. The optimistic change is the outbox entry itself (see
 * model/overlay.ts).
 */
import { TIMER_EVENT_TYPES } from '@fieldchart/schema/api';
import { MAX_MUTATION_BYTES, MUTATION_ARGS, type MutationArgs, type MutationName } from '@fieldchart/schema/sync';
import type { LocalDb } from '../storage/local-db.ts';
import { appendToOutbox } from '../storage/outbox.ts';
import type { Visit } from '../model/views.ts';
import { InvalidWriteError } from './errors.ts';

/** Checks `args` against the mutation's contract; answers them normalised (trimmed, rounded…). */
export function checkArgs<N extends MutationName>(name: N, args: MutationArgs<N>): Record<string, unknown> {
  const parsed = MUTATION_ARGS[name].safeParse(args);
  if (!parsed.success) {
    const fieldErrors: Record<string, string[]> = {};
    for (const issue of parsed.error.issues) {
      const key = issue.path.map(String).join('.') || '(args)';
      (fieldErrors[key] ??= []).push(issue.message);
    }
    throw new InvalidWriteError(`Invalid ${name}: ${Object.keys(fieldErrors).join(', ')}`, fieldErrors);
  }
  // The server refuses a bigger mutation (and a frame over its limit closes the socket): it
  // could never be sent, so it is not queued.
  if (new TextEncoder().encode(JSON.stringify(parsed.data)).length > MAX_MUTATION_BYTES) {
    throw new InvalidWriteError(`Invalid ${name}: larger than ${MAX_MUTATION_BYTES} bytes`, { '(args)': ['too large'] }, 'payload_too_large');
  }
  return parsed.data as Record<string, unknown>;
}

/** Appends one write to the outbox in its own local transaction; answers the mutation id. */
export async function queueWrite(
  db: LocalDb,
  name: MutationName,
  args: Record<string, unknown>,
  scheduleUuid: string | null,
  local: Record<string, unknown> = {},
): Promise<number> {
  const clientTime = new Date().toISOString();
  return db.transaction((tx) => appendToOutbox(tx, { name, args, local, scheduleUuid, clientTime }));
}

type TimerEventInput = MutationArgs<'visit.timer_events'>['events'][number];

/**
 * The server's sequence rule, checked against the visit as the device shows it: one event per
 * step, each step after its predecessor. A batch that breaks it would only be rejected later.
 */
export function checkTimerSequence(visit: Visit, events: readonly TimerEventInput[]): void {
  const rank = (t: string) => TIMER_EVENT_TYPES.indexOf(t as (typeof TIMER_EVENT_TYPES)[number]);
  const byType = new Map<string, number>(visit.timer_events.map((e) => [e.event_type, Date.parse(e.event_time)]));
  const order = events
    .map((event, index) => ({ event, index, time: Date.parse(event.event_time) }))
    .sort((a, b) => a.time - b.time || rank(a.event.event_type) - rank(b.event.event_type) || a.index - b.index);
  for (const { event, index, time } of order) {
    const fail = (message: string) => {
      throw new InvalidWriteError(`Event ${index}: ${message}`, { [`events.${index}`]: [message] }, 'invalid_timer_sequence');
    };
    const existing = byType.get(event.event_type);
    if (existing !== undefined) {
      if (existing === time) continue;
      fail(`${event.event_type} is already recorded at ${new Date(existing).toISOString()}`);
    }
    const r = rank(event.event_type);
    const previous = r > 0 ? TIMER_EVENT_TYPES[r - 1] : undefined;
    if (previous) {
      const at = byType.get(previous);
      if (at === undefined) fail(`${event.event_type} must follow ${previous}`);
      else if (time < at) fail(`${event.event_type} is earlier than ${previous} (${new Date(at).toISOString()})`);
    }
    byType.set(event.event_type, time);
  }
}
