/**
 * The change feed (docs/sync-protocol.md, The change feed): everything in a clinician's scope
 * that the device's snapshot did not see, read in one REPEATABLE READ transaction whose own
 * snapshot becomes the next cursor.
 */
import { and, eq, gte, isNull, lte, or, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { aiTranscriptions, notifications, patientReferrals, patients, soapNotes, timerEvents, visitMileage, visits } from '@fieldchart/schema/db';
import type { Change, OrganizationConfigRow } from '@fieldchart/schema/sync';
import { rowsOf, type Db } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { PhiCrypto } from '../security/phi-crypto.ts';
import { localDate } from '@fieldchart/schema/rules';
import { notificationRecord } from '../services/notifications/notifications.ts';
import { statusRecordOf } from '../services/ai/pipeline/records.ts';
import { openPatient } from '../services/patients/patient-codec.ts';
import { addDays } from '@fieldchart/schema/rules';
import { soapRecordOf, visitFieldsOf } from '../services/visits/visit-records.ts';
import { decodeCursor, encodeCursor, shortHash, type Cursor } from './cursor.ts';

/** Visit dates in scope, relative to the clinician's today. */
export const WINDOW_DAYS_BACK = 30;
export const WINDOW_DAYS_AHEAD = 14;

export interface FeedScope {
  readonly timeZone: string;
  readonly organizationId: string | null;
  readonly config: OrganizationConfigRow;
}

export interface FeedResult {
  /** Why the device must clear its synced tables first, or null for a diff. */
  readonly reset: 'first_sync' | 'scope_changed' | 'cursor_unknown' | null;
  readonly changes: Change[];
  readonly cursor: string;
}

export interface FeedDeps {
  /** Runs the read in one transaction that the scope lookups (services) share. */
  readonly unitOfWork: UnitOfWork;
  readonly phi: PhiCrypto;
  /** The clinician's time zone, seat and effective configuration, read in the feed's transaction. */
  scopeOf(tx: Db, userId: string): Promise<FeedScope>;
}

export function windowOf(now: Date, timeZone: string): { from: string; to: string } {
  const today = localDate(now, timeZone);
  return { from: addDays(today, -WINDOW_DAYS_BACK), to: addDays(today, WINDOW_DAYS_AHEAD) };
}

interface Row {
  readonly rowVersion: number;
  readonly deletedAt: Date | null;
}

export function createFeed(deps: FeedDeps) {
  const { phi } = deps;

  return {
    /** Reads the changes since `cursorText` (null: the whole scope). */
    async read(userId: string, cursorText: string | null, now: Date): Promise<FeedResult> {
      return deps.unitOfWork.transaction(
        async (tx) => {
          // REPEATABLE READ: every statement of the transaction sees one snapshot, the one
          // pg_current_snapshot() names, so it can be read alongside the scope (pipelined).
          const [snapshotResult, scope] = await Promise.all([tx.execute(sql`select pg_current_snapshot()::text as snapshot`), deps.scopeOf(tx, userId)]);
          const [taken] = rowsOf<{ snapshot: string }>(snapshotResult);
          if (!taken) throw new Error('pg_current_snapshot() answered no row');
          const current = taken.snapshot;
          const window = windowOf(now, scope.timeZone);
          const scopeHash = shortHash({ userId, organizationId: scope.organizationId });
          const configHash = shortHash(scope.config);
          const previous = decodeCursor(cursorText);
          const reset: FeedResult['reset'] =
            cursorText === null
              ? 'first_sync'
              : !previous || !snapshotPrecedes(previous.snapshot, current)
                ? 'cursor_unknown'
                : previous.scope !== scopeHash
                  ? 'scope_changed'
                  : null;
          const since = reset ? null : (previous as Cursor);
          const changes: Change[] = [];

          const changed = (t: { txid: AnyPgColumn }): SQL =>
            since
              ? sql`(${t.txid} >= pg_snapshot_xmin(${since.snapshot}::pg_snapshot) and not pg_visible_in_snapshot(${t.txid}, ${since.snapshot}::pg_snapshot))`
              : sql`true`;
          const live = (t: { deletedAt: AnyPgColumn }): SQL | undefined => (since ? undefined : isNull(t.deletedAt));
          const inWindow = and(gte(visits.visitDate, window.from), lte(visits.visitDate, window.to));
          // Visits the window took in since the device's cursor: never written, still new to it.
          const entered = since
            ? sql`(${visits.visitDate} >= ${window.from} and ${visits.visitDate} <= ${window.to} and not (${visits.visitDate} >= ${since.windowFrom} and ${visits.visitDate} <= ${since.windowTo}))`
            : sql`true`;

          const push = (table: Change['table'], id: string, row: Row, body: () => Record<string, unknown>, inScope = true) => {
            if (row.deletedAt || !inScope) changes.push({ table, op: 'delete', id, version: row.rowVersion });
            else changes.push({ table, op: 'upsert', id, version: row.rowVersion, row: body() });
          };

          // A visit's events, note and mileage travel when they changed, or when their visit is
          // new to the device (changed, or taken in by the window).
          const childScope = (child: { txid: AnyPgColumn; deletedAt: AnyPgColumn }) =>
            since
              ? and(eq(visits.ownerId, userId), inWindow, or(changed(child), changed(visits), entered))
              : and(eq(visits.ownerId, userId), inWindow, isNull(visits.deletedAt), isNull(child.deletedAt));
          // Issued together: on PostgreSQL they are pipelined on the transaction's connection,
          // one round trip instead of seven.
          const [patientRows, referralRows, visitRows, eventRows, noteRows, mileageRows, notificationRows, aiRows] = await Promise.all([
            tx.select().from(patients).where(and(eq(patients.ownerId, userId), changed(patients), live(patients))),
            tx.select().from(patientReferrals).where(and(eq(patientReferrals.ownerId, userId), changed(patientReferrals), live(patientReferrals))),
            // Visits in the window and new to the device; a changed visit now outside it left the scope.
            tx
              .select()
              .from(visits)
              .where(and(eq(visits.ownerId, userId), since ? or(changed(visits), entered) : and(inWindow, isNull(visits.deletedAt)))),
            tx
              .select({ e: timerEvents })
              .from(timerEvents)
              .innerJoin(visits, eq(visits.id, timerEvents.visitId))
              .where(and(eq(timerEvents.ownerId, userId), childScope(timerEvents))),
            tx
              .select({ n: soapNotes })
              .from(soapNotes)
              .innerJoin(visits, eq(visits.id, soapNotes.visitId))
              .where(and(eq(soapNotes.ownerId, userId), childScope(soapNotes))),
            tx
              .select({ m: visitMileage })
              .from(visitMileage)
              .innerJoin(visits, eq(visits.id, visitMileage.visitId))
              .where(and(eq(visitMileage.ownerId, userId), childScope(visitMileage))),
            tx.select().from(notifications).where(and(eq(notifications.ownerId, userId), changed(notifications), live(notifications))),
            // AI runs of visits in scope, like a visit's other children (docs/sync-protocol.md).
            tx
              .select({ a: aiTranscriptions })
              .from(aiTranscriptions)
              .innerJoin(visits, eq(visits.id, aiTranscriptions.visitId))
              .where(and(eq(aiTranscriptions.ownerId, userId), childScope(aiTranscriptions))),
          ]);

          for (const p of patientRows) {
            push('patients', p.id, p, () => ({
              uuid: p.id,
              ...openPatient(phi, p),
              created_at: p.createdAt.toISOString(),
              updated_at: p.updatedAt.toISOString(),
            }));
          }
          for (const r of referralRows) {
            push('patient_referrals', r.id, r, () => ({
              uuid: r.id,
              patient_uuid: r.patientId,
              status: r.status,
              discipline: r.discipline,
              diagnosis_codes: r.diagnosisCodes,
              referral_source: r.referralSource,
              start_of_care: r.startOfCare,
              ordered_frequency: r.orderedFrequency,
              discharged_at: r.dischargedAt?.toISOString() ?? null,
              created_at: r.createdAt.toISOString(),
            }));
          }

          for (const v of visitRows) {
            const inScope = v.visitDate >= window.from && v.visitDate <= window.to;
            push('visits', v.id, v, () => visitFieldsOf(phi, v), inScope);
          }

          for (const { e } of eventRows) {
            push('timer_events', e.id, e, () => ({
              uuid: e.id,
              schedule_uuid: e.visitId,
              event_type: e.eventType,
              event_time: e.eventTime.toISOString(),
              latitude: e.latitude,
              longitude: e.longitude,
              accuracy: e.accuracy,
            }));
          }
          for (const { n } of noteRows) {
            push('soap_notes', n.id, n, () => {
              const { signature: _image, ...note } = soapRecordOf(phi, n);
              return { ...note, schedule_uuid: n.visitId };
            });
          }
          for (const { m } of mileageRows) {
            push('visit_mileage', m.visitId, m, () => ({
              schedule_uuid: m.visitId,
              total_miles: m.totalMiles,
              travel_miles: m.travelMiles,
              onsite_miles: m.onsiteMiles,
              recorded_at: m.recordedAt.toISOString(),
            }));
          }

          for (const n of notificationRows) push('notifications', n.id, n, () => notificationRecord(n));
          for (const { a } of aiRows) {
            push('ai_status', a.id, a, () => ({ ...statusRecordOf(phi, a) }));
          }

          if (!since || since.config !== configHash) {
            changes.push({ table: 'organization_config', op: 'upsert', id: userId, version: 0, row: { ...scope.config } });
          }

          changes.sort((a, b) => a.version - b.version);
          const cursor = encodeCursor({ snapshot: current, windowFrom: window.from, windowTo: window.to, scope: scopeHash, config: configHash });
          return { reset, changes, cursor };
        },
        { isolationLevel: 'repeatable read', accessMode: 'read only' },
      );
    },
  };
}

/** A cursor from this database's past: its snapshot's xmax is not beyond the current one's. */
function snapshotPrecedes(previous: string, current: string): boolean {
  const xmaxOf = (s: string) => BigInt(s.split(':')[1] ?? '0');
  return xmaxOf(previous) <= xmaxOf(current);
}
