/**
 * Consecutive queued mutations applied as a set (docs/sync-protocol.md, Mutations): each
 * service decides in memory, in order, what every mutation answers under the same rules as
 * its one-at-a-time call, then writes one statement per table — one INSERT of all the timer
 * events, one UPDATE of the visits, one upsert of mileage, one INSERT of patients and of
 * referrals, one of the audit entries. All in one savepoint: when any mutation would be
 * refused, or a statement fails (a value the database refuses), nothing of the set stays and
 * the caller applies the same mutations one by one, each in its own savepoint, so each
 * refusal is its own. Answers are the same either way; the property test
 * (test/server/sync/mutation-sets.property.test.ts) holds the two paths to it.
 */
import type * as z from 'zod';
import { MUTATION_ARGS, type MutationName } from '@fieldchart/schema/sync';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { AuditContext, AuditEntry } from '../audit/audit-log.ts';
import type { BatchPlan } from '../batch-plan.ts';
import type { Services } from '../index.ts';
import type { MileageItem } from '../visits/mileage-batch.ts';
import type { TimerEventsInput } from '../visits/timer-events.ts';
import type { PatientCreateItem } from '../patients/patients-batch.ts';

/**
 * The mutations that can share a set: their reads do not see each other's writes across
 * kinds (timer events read a visit's events and status; mileage a visit's mileage; a patient
 * create the ids of patients and referrals), so each kind keeps its own order and the kinds
 * may be written one after the other.
 */
const SET_NAMES: ReadonlySet<MutationName> = new Set(['visit.timer_events', 'visit.mileage', 'patient.create']);

export const runsInSet = (name: MutationName): boolean => SET_NAMES.has(name);

export interface SetMutation {
  readonly name: MutationName;
  readonly args: Record<string, unknown>;
  /** The audit request id of this mutation (as its one-at-a-time call would get). */
  readonly requestId: string;
}

/** Results per mutation, in order; null: apply them one by one. */
export type MutationSetRunner = (ctx: Omit<ClinicianContext, 'requestId'>, set: readonly SetMutation[]) => Promise<unknown[] | null>;

/** Thrown inside the set's savepoint to roll it back: some mutation would be refused. */
class NotASet extends Error {}

export function createMutationSetRunner(services: Services): MutationSetRunner {
  return async (ctx, set) => {
    const timers: Array<{ at: number; input: TimerEventsInput }> = [];
    const mileage: Array<{ at: number; item: MileageItem }> = [];
    const creates: Array<{ at: number; item: PatientCreateItem }> = [];
    for (const [at, m] of set.entries()) {
      if (!runsInSet(m.name)) return null;
      // A refusal of the arguments is the one-at-a-time path's to phrase.
      const parsed = MUTATION_ARGS[m.name].safeParse(m.args);
      if (!parsed.success) return null;
      if (m.name === 'visit.timer_events') timers.push({ at, input: parsed.data as TimerEventsInput });
      else if (m.name === 'visit.mileage') mileage.push({ at, item: parsed.data as MileageItem });
      else {
        const { uuid, referral_uuid, ...body } = parsed.data as z.output<(typeof MUTATION_ARGS)['patient.create']>;
        creates.push({ at, item: { body, uuid, referral_uuid } });
      }
    }
    try {
      return await services.unitOfWork.savepoint(async () => {
        const tx = services.unitOfWork.db;
        const owner = ctx.actorUserId;
        const ready = (plan: BatchPlan<unknown> | null): BatchPlan<unknown> => {
          if (!plan) throw new NotASet();
          return plan;
        };
        const plans = [
          { at: timers.map((t) => t.at), plan: ready(await services.visitTimerBatch.plan(tx, owner, timers.map((t) => t.input))) },
          { at: mileage.map((t) => t.at), plan: ready(await services.visitMileageBatch.plan(tx, owner, mileage.map((t) => t.item))) },
          { at: creates.map((t) => t.at), plan: ready(await services.patients.batch.plan(tx, ctx, creates.map((t) => t.item))) },
        ];
        const results: unknown[] = new Array(set.length);
        const audits: Array<{ ctx: AuditContext; entry: AuditEntry }> = new Array(set.length);
        for (const { at, plan } of plans) {
          for (const [k, i] of at.entries()) {
            results[i] = plan.results[k];
            audits[i] = { ctx: { ...ctx, requestId: (set[i] as SetMutation).requestId }, entry: plan.audits[k] as AuditEntry };
          }
        }
        for (const { plan } of plans) await plan.write(tx);
        await services.audit.recordSucceeded(tx, audits);
        return results;
      });
    } catch {
      // Some mutation would be refused, or a statement failed (a value the database refuses, a
      // lost connection): one by one, the same mutations meet the same failure on their own.
      return null;
    }
  };
}
