/**
 * Local writes: the contract's check of the arguments on the device (so an obviously invalid
 * write is refused at once, not queued to be rejected later), then one local transaction that
 * appends the write to the outbox. The optimistic change is the outbox entry itself (see
 * model/overlay.ts).
 */
import { applyTimerEvents, fieldErrorsFromIssues, type TimerEventType } from '@fieldchart/schema/rules';
import { MAX_MUTATION_BYTES, MUTATION_ARGS, type MutationArgs, type MutationName } from '@fieldchart/schema/sync';
import type { LocalDb } from '../storage/local-db.ts';
import { appendSealed, idOfSealed, sealEntry } from '../storage/outbox.ts';
import type { Visit } from '../model/views.ts';
import { InvalidWriteError } from './errors.ts';

/** Checks `args` against the mutation's contract; answers them normalised (trimmed, rounded…). */
export function checkArgs<N extends MutationName>(name: N, args: MutationArgs<N>): Record<string, unknown> {
  const parsed = MUTATION_ARGS[name].safeParse(args);
  if (!parsed.success) {
    const fieldErrors = fieldErrorsFromIssues(parsed.error.issues, { root: '(args)' });
    throw new InvalidWriteError(`Invalid ${name}: ${Object.keys(fieldErrors).join(', ')}`, fieldErrors);
  }
  // The server refuses a bigger mutation (and a frame over its limit closes the socket): it
  // could never be sent, so it is not queued.
  if (new TextEncoder().encode(JSON.stringify(parsed.data)).length > MAX_MUTATION_BYTES) {
    throw new InvalidWriteError(`Invalid ${name}: larger than ${MAX_MUTATION_BYTES} bytes`, { '(args)': ['too large'] }, 'payload_too_large');
  }
  return parsed.data as Record<string, unknown>;
}

/**
 * Appends one write to the outbox in its own local transaction; answers the mutation id. If the
 * tab holding the shared database closed during it, the next leader's outbox says whether it was
 * kept (the same sealed bytes): once, never twice.
 */
export async function queueWrite(
  db: LocalDb,
  name: MutationName,
  args: Record<string, unknown>,
  scheduleUuid: string | null,
  local: Record<string, unknown> = {},
): Promise<number> {
  const entry = await sealEntry(db, { name, args, local, scheduleUuid, clientTime: new Date().toISOString() });
  return db.transaction((tx) => appendSealed(tx, entry), { made: (q) => idOfSealed(q, entry) });
}

type TimerEventInput = MutationArgs<'visit.timer_events'>['events'][number];

/**
 * The server's sequence rule (the same function), checked against the visit as the device
 * shows it: one event per step, each step after its predecessor. A batch that breaks it would
 * only be rejected later.
 */
export function checkTimerSequence(visit: Visit, events: readonly TimerEventInput[]): void {
  const step = (e: { event_type: string; event_time: string }) => ({ eventType: e.event_type as TimerEventType, eventTime: new Date(e.event_time) });
  const result = applyTimerEvents(visit.timer_events.map(step), events.map(step));
  if (!result.ok) {
    throw new InvalidWriteError(`Event ${result.index}: ${result.message}`, { [`events.${result.index}`]: [result.message] }, 'invalid_timer_sequence');
  }
}
