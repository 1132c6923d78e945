import { and, getTableName, isNotNull, lt, or, sql } from 'drizzle-orm';
import {
  aiTranscriptions,
  auditLog,
  mailOutbox,
  notifications,
  passwordResets,
  patientReferrals,
  patients,
  refreshTokens,
  sessions,
  soapNotes,
  syncMutationDigestRuns,
  throttles,
  timerEvents,
  visitMileage,
  visits,
} from '@fieldchart/schema/db';
import { rowsOf, type Db } from '../db/database.ts';
import type { Clock } from '../clock.ts';
import type { Idempotency } from './idempotency.ts';
import { pruneLedger } from './sync/mutation-ledger-retention.ts';

const DAY = 86_400_000;

/**
 * The tables a clinician's work grows, whose plans the feed and the sync path depend on: on the
 * embedded database each is analyzed again once it has grown by a fifth since its last ANALYZE.
 */
const GROWING_TABLES = [visits, timerEvents, visitMileage, soapNotes, patients, patientReferrals, notifications, aiTranscriptions, auditLog, syncMutationDigestRuns].map(
  (t) => getTableName(t),
);
/** How often the embedded server looks for grown tables (one catalog read, ~2.5 ms on PGlite). */
export const GROWTH_CHECK_MS = 10_000;

/** Retention rules, in one place so the README can quote them. */
export const RETENTION = {
  revokedSessionsDays: 30,
  passwordResetDays: 1,
  sentMailLogDays: 30,
  /**
   * How long a refused mutation is answered again as refused when a device replays it, and a
   * processed mutation's digest is kept to tell a cloned install's replay from a duplicate.
   */
  syncRejectionDays: 30,
} as const;

export function createMaintenance(deps: { db: Db; clock: Clock; idempotency: Idempotency; embedded: boolean }) {
  const { db, clock } = deps;
  return {
    /**
     * Refreshes the planner's statistics on the embedded database, which has no autovacuum:
     * without them a clinician's feed query plans as if the tables were empty and scans
     * everyone's rows (measured: 18.7 s against 2.0 s for 60k rows). PostgreSQL's autovacuum
     * does this itself.
     */
    async analyzeEmbedded(): Promise<boolean> {
      if (!deps.embedded) return false;
      await db.execute(sql`analyze`);
      return true;
    },

    /**
     * On the embedded database, ANALYZEs the tables that grew by more than a fifth (and eight
     * pages) since their statistics were taken, as PostgreSQL's autovacuum would after enough
     * changes; the plans built on the old statistics are dropped with them. Plans made while a
     * table was small otherwise stay until the hourly ANALYZE (docs/operations.md, "Planner
     * statistics on the embedded database", has the reconcile bench's figures). Answers the
     * tables analyzed.
     */
    async analyzeGrown(): Promise<string[]> {
      if (!deps.embedded) return [];
      const grown = rowsOf<{ name: string }>(
        await db.execute(sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = current_schema() and c.relkind = 'r' and c.relname in (${sql.join(GROWING_TABLES.map((t) => sql`${t}`), sql`, `)})
            and pg_relation_size(c.oid) / current_setting('block_size')::int > c.relpages * 1.2 + 8`),
      ).map((r) => r.name);
      if (grown.length > 0) await db.execute(sql`analyze ${sql.join(grown.map((t) => sql.identifier(t)), sql`, `)}`);
      return grown;
    },

    async purgeExpired(): Promise<Record<string, number>> {
      const now = clock.now().getTime();
      const before = (days: number) => new Date(now - days * DAY);
      const idempotency = await deps.idempotency.purgeExpired();
      const throttleRows = await db
        .delete(throttles)
        .where(sql`${throttles.windowStartedAt} + make_interval(secs => ${throttles.windowSeconds}) < ${new Date(now).toISOString()}::timestamptz`)
        .returning({ key: throttles.key });
      const resets = await db
        .delete(passwordResets)
        .where(lt(passwordResets.createdAt, before(RETENTION.passwordResetDays)))
        .returning({ id: passwordResets.id });
      const refresh = await db
        .delete(refreshTokens)
        .where(or(lt(refreshTokens.expiresAt, new Date(now)), lt(refreshTokens.retiredAt, before(RETENTION.revokedSessionsDays))))
        .returning({ id: refreshTokens.id });
      const oldSessions = await db
        .delete(sessions)
        .where(or(lt(sessions.expiresAt, new Date(now)), and(isNotNull(sessions.revokedAt), lt(sessions.revokedAt, before(RETENTION.revokedSessionsDays)))))
        .returning({ id: sessions.id });
      const mail = await db
        .delete(mailOutbox)
        .where(and(isNotNull(mailOutbox.sentAt), lt(mailOutbox.sentAt, before(RETENTION.sentMailLogDays))))
        .returning({ id: mailOutbox.id });
      const ledger = await pruneLedger(db, before(RETENTION.syncRejectionDays));
      return {
        sync_rejections: ledger.rejections,
        sync_mutation_digests: ledger.digests,
        idempotency_keys: idempotency,
        throttles: throttleRows.length,
        password_resets: resets.length,
        refresh_tokens: refresh.length,
        sessions: oldSessions.length,
        mail_outbox: mail.length,
      };
    },
  };
}
