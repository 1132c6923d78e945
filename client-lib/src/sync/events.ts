/** What the offline client tells the app, besides its status snapshot. */
import type { Failure, Rejection } from '../storage/outbox.ts';
import type { SyncStatus } from './status.ts';

export interface SyncEvents extends Record<string, unknown> {
  status: SyncStatus;
  /** Local data changed (feed unit applied, write acknowledged or rolled back): re-read. */
  change: { readonly reason: 'feed' | 'ack' | 'reject' | 'write' | 'reset' };
  rejection: Rejection;
  /** The server parked a write after repeated unexpected errors: kept, out of the queue. */
  failure: Failure;
  /** A dictation was stored, made progress or changed state (`dictations.get(id)`). */
  dictation: { readonly id: string };
  /** The server acknowledged a mutation. */
  ack: { readonly mutationId: number; readonly name: string; readonly scheduleUuid: string | null; readonly result: unknown };
}
