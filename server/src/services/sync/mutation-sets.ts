/**
 * Consecutive queued mutations applied as a set (docs/sync-protocol.md, Mutations): each
 * service decides in memory, in order, what every mutation answers under the same rules as
 * its one-at-a-time call, then writes one statement per table — one INSERT of all the timer
 * events, one UPDATE of the visits, one upsert of mileage, one INSERT of patients and of
 * referrals, one of the audit entries. When a mutation would be refused (decided in memory,
 * before anything is written) there is no plan, only where the first such mutation is: the
 * caller applies those before it as a set of their own, that one by itself in its own
 * savepoint, so each refusal is its own, and sets again after it. A statement that fails (a
 * value the database refuses) throws: the caller's transaction is then lost and the caller
 * applies the whole batch again without sets (mutation-ledger.ts) — no savepoint per set,
 * two round trips fewer per batch. Answers are the same either way; the property test
 * (test/server/sync/mutation-sets.property.test.ts) holds the two paths to it.
 *
 * The reads of the three kinds are issued together, and so are the writes: on PostgreSQL the
 * driver pipelines them on the transaction's connection (one round trip instead of six; only
 * because drizzle's statements are prepared, patches/README.md), on PGlite they queue in order
 * on its one session. Order within the transaction is the order they are issued, so each
 * kind's lock is taken before its read.
 */
import type * as z from 'zod';
import { MUTATION_ARGS, type MutationName } from '@fieldchart/schema/sync';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { AuditContext, AuditEntry } from '../audit/audit-log.ts';
import { allSettled, isRefused, settled, type BatchPlan, type Refused } from '../batch-plan.ts';
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

/** A set decided and not written yet: its results per mutation, in order, and the writes that make them so. */
export interface SetPlan {
  readonly results: readonly unknown[];
  /** The set's statements, issued together; a failure leaves the caller's transaction aborted. */
  write(): Promise<void>;
}

/**
 * The plan of a set, or where its first refused mutation is (nothing written: the mutations
 * before it plan again as a set of their own, it goes on its own). The kinds do not read each
 * other's writes, so the first refusal of any kind ends the valid prefix of all of them.
 * Throws when a statement fails: the transaction is lost.
 */
export type MutationSetRunner = (ctx: Omit<ClinicianContext, 'requestId'>, set: readonly SetMutation[]) => Promise<SetPlan | Refused>;

export function createMutationSetRunner(services: Services): MutationSetRunner {
  return async (ctx, set) => {
    const timers: Array<{ at: number; input: TimerEventsInput }> = [];
    const mileage: Array<{ at: number; item: MileageItem }> = [];
    const creates: Array<{ at: number; item: PatientCreateItem }> = [];
    for (const [at, m] of set.entries()) {
      if (!runsInSet(m.name)) return { refusedAt: at };
      // A refusal of the arguments is the one-at-a-time path's to phrase.
      const parsed = MUTATION_ARGS[m.name].safeParse(m.args);
      if (!parsed.success) return { refusedAt: at };
      if (m.name === 'visit.timer_events') timers.push({ at, input: parsed.data as TimerEventsInput });
      else if (m.name === 'visit.mileage') mileage.push({ at, item: parsed.data as MileageItem });
      else {
        const { uuid, referral_uuid, ...body } = parsed.data as z.output<(typeof MUTATION_ARGS)['patient.create']>;
        creates.push({ at, item: { body, uuid, referral_uuid } });
      }
    }
    const tx = services.unitOfWork.db;
    const owner = ctx.actorUserId;
    const [timerPlan, mileagePlan, createPlan] = await allSettled([
      services.visitTimerBatch.plan(tx, owner, timers.map((t) => t.input)),
      services.visitMileageBatch.plan(tx, owner, mileage.map((t) => t.item)),
      services.patients.batch.plan(tx, ctx, creates.map((t) => t.item)),
    ]);
    if (isRefused(timerPlan) || isRefused(mileagePlan) || isRefused(createPlan)) {
      // Each kind's refusal is an index among that kind's mutations: where it stands in the set.
      const inSet = (plan: BatchPlan<unknown> | Refused, of: ReadonlyArray<{ at: number }>) => (isRefused(plan) ? (of[plan.refusedAt]?.at ?? 0) : set.length);
      return { refusedAt: Math.min(inSet(timerPlan, timers), inSet(mileagePlan, mileage), inSet(createPlan, creates)) };
    }
    const plans: Array<{ at: number[]; plan: BatchPlan<unknown> }> = [
      { at: timers.map((t) => t.at), plan: timerPlan },
      { at: mileage.map((t) => t.at), plan: mileagePlan },
      { at: creates.map((t) => t.at), plan: createPlan },
    ];
    const results: unknown[] = new Array(set.length);
    const audits: Array<{ ctx: AuditContext; entry: AuditEntry }> = new Array(set.length);
    for (const { at, plan } of plans) {
      for (const [k, i] of at.entries()) {
        results[i] = plan.results[k];
        audits[i] = { ctx: { ...ctx, requestId: (set[i] as SetMutation).requestId }, entry: plan.audits[k] as AuditEntry };
      }
    }
    return {
      results,
      write: () => settled([...plans.map(({ plan }) => plan.write(tx)), services.audit.recordSucceeded(tx, audits)]),
    };
  };
}
