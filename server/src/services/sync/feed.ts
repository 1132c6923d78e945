/**
 * The change feed (docs/sync-protocol.md, The change feed): everything in a clinician's scope
 * that the device's snapshot did not see, and the clinician's scope itself, read by ONE
 * statement whose snapshot (`pg_current_snapshot()`, the statement's own) becomes the next
 * cursor. A statement sees one snapshot from start to end, as a REPEATABLE READ transaction
 * does, so one statement is exact — and a poke costs one round trip instead of a transaction
 * of several (the feed runs on every change of a clinician's data).
 *
 * Each table's rows come back as one JSON array (`json_agg`), mapped to the table's row type
 * by the table's own column mappers (`rowsFromJson`), so the records are built by the same
 * functions as REST's — except timer events (no sealed PHI, most of a scope's rows), whose
 * change messages PostgreSQL writes itself, and visits (the next most), whose messages it
 * writes but for the two sealed columns the feed opens (held to REST's fields by a property).
 */
import { and, eq, getTableColumns, gte, isNull, lte, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import { QueryBuilder, type AnyPgColumn, type PgTable } from 'drizzle-orm/pg-core';
import {
  aiTranscriptions,
  clinicianSettings,
  notifications,
  organizationMembers,
  organizations,
  patientReferrals,
  patients,
  soapNotes,
  syncClients,
  timerEvents,
  users,
  visitMileage,
  visits,
} from '@fieldchart/schema/db';
import type { Change, OrganizationConfigRow } from '@fieldchart/schema/sync';
import { addDays, localDate } from '@fieldchart/schema/rules';
import { rowsOf, type Db } from '../../db/database.ts';
import { sessionPrepared } from '../../db/one-statement.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { DEFAULT_TIME_ZONE } from '../clinician-settings.ts';
import { notificationRecord } from '../notifications/notifications.ts';
import { statusRecordOf } from '../ai/pipeline/records.ts';
import { effectiveConfig, organizationSettingsOf } from '../organizations/effective-config.ts';
import { openPatient } from '../patients/patient-codec.ts';
import { soapRecordOf } from '../visits/visit-records.ts';
import { decodeCursor, encodeCursor, shortHash, type Cursor } from './feed-cursor.ts';

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
  /** The changes as they travel (JSON, one per change), ordered by version. */
  readonly serialized: readonly string[];
  /** The same changes as objects (parsed on demand: the socket sends `serialized`). */
  readonly changes: Change[];
  readonly cursor: string;
  /** The device's last processed mutation id as this snapshot saw it (protocol 2), else null. */
  readonly ackedThrough: number | null;
  /** The clinician's time zone as this read found it: the hint for the next read. */
  readonly timeZone: string;
}

export interface FeedReadOptions {
  /** Protocol 2: also read this device's last processed mutation id, in the same snapshot. */
  readonly clientId?: string;
  /**
   * The time zone the previous read found. The window is computed from it before the
   * statement runs; if the statement finds another, the read runs again with that one.
   */
  readonly timeZone?: string;
}

export interface FeedDeps {
  /** The pool (or the ambient transaction): the feed is one statement. */
  readonly db: Db;
  readonly phi: PhiCrypto;
  /** The database is one session (PGlite): prepare the statements in SQL (see `preparedFeed`). */
  readonly oneSession?: boolean;
}

export function windowOf(now: Date, timeZone: string): { from: string; to: string } {
  const today = localDate(now, timeZone);
  return { from: addDays(today, -WINDOW_DAYS_BACK), to: addDays(today, WINDOW_DAYS_AHEAD) };
}

interface Row {
  readonly rowVersion: number;
  readonly deletedAt: Date | null;
}

type Window = { readonly from: string; readonly to: string };

const qb = new QueryBuilder();

/**
 * Rows of `table` from `json_agg` output (keys are column names, values JSON) through each
 * column's own driver mapping — the same values a select of the table gives.
 */
function rowsFromJson<T extends PgTable>(table: T): (rows: unknown) => Array<T['$inferSelect']> {
  const columns = Object.entries(getTableColumns(table)).map(([key, column]) => [key, column.name, column] as const);
  return (rows) =>
    (parseJson(rows) as Array<Record<string, unknown>>).map((json) => {
      const out: Record<string, unknown> = {};
      for (const [key, name, column] of columns) {
        const value = json[name];
        out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
      }
      return out as T['$inferSelect'];
    });
}

/** postgres.js parses json columns; PGlite's text cast arrives as a string. */
const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

const asPatients = rowsFromJson(patients);
const asReferrals = rowsFromJson(patientReferrals);
const asNotes = rowsFromJson(soapNotes);
const asMileage = rowsFromJson(visitMileage);
const asNotifications = rowsFromJson(notifications);
const asAiRuns = rowsFromJson(aiTranscriptions);
const asOrganization = rowsFromJson(organizations);

/** One JSON array of the rows a select returns. */
const agg = (query: SQLWrapper): SQL => sql`(select coalesce(json_agg(t), '[]'::json) from (${query}) t)`;

/** The statement's parameters (prepared once: only these change from run to run). */
type Params = {
  readonly user: string;
  readonly client: string;
  readonly from: string;
  readonly to: string;
  /** Diff only: the device's cursor. */
  readonly since?: string;
  readonly sinceFrom?: string;
  readonly sinceTo?: string;
};

const p = (name: keyof Params) => sql.placeholder(name);
/** The client id when the caller wants no acked_through (protocol 1): names no device. */
const NO_CLIENT = '00000000-0000-0000-0000-000000000000';

/**
 * The feed's statement: the scope, the snapshot and the rows new to a device at a cursor
 * (`diff`) or the whole scope (`full`), with placeholders for `Params`.
 */
function feedFields(mode: 'diff' | 'full') {
  const diff = mode === 'diff';
  const user = p('user');
  const changed = (t: { txid: AnyPgColumn }): SQL =>
    diff ? sql`(${t.txid} >= pg_snapshot_xmin(${p('since')}::pg_snapshot) and not pg_visible_in_snapshot(${t.txid}, ${p('since')}::pg_snapshot))` : sql`true`;
  const live = (t: { deletedAt: AnyPgColumn }): SQL | undefined => (diff ? undefined : isNull(t.deletedAt));
  // Rows made under an organization seat are that organization's: in scope only while the
  // user holds that seat (docs/sync-protocol.md, Leaving an organization). A seat change resets
  // the feed (the scope hash), so a diff never sees this change.
  const seat = sql`(select ${organizationMembers.organizationId} from ${organizationMembers} where ${organizationMembers.userId} = ${user})`;
  const ofSeat = (t: { organizationId: AnyPgColumn }): SQL => sql`(${t.organizationId} is null or ${t.organizationId} = ${seat})`;
  const inWindow = and(gte(visits.visitDate, p('from')), lte(visits.visitDate, p('to')), ofSeat(visits));
  // Visits the window took in since the device's cursor: never written, still new to it.
  const entered = diff
    ? sql`(${visits.visitDate} >= ${p('from')}::date and ${visits.visitDate} <= ${p('to')}::date and not (${visits.visitDate} >= ${p('sinceFrom')}::date and ${visits.visitDate} <= ${p('sinceTo')}::date))`
    : sql`true`;
  // A visit's events, note and mileage travel when they changed, or when their visit is new
  // to the device (changed, or taken in by the window).
  const childScope = (child: { txid: AnyPgColumn; deletedAt: AnyPgColumn }) =>
    diff
      ? and(eq(visits.ownerId, user), inWindow, or(changed(child), changed(visits), entered))
      : and(eq(visits.ownerId, user), inWindow, isNull(visits.deletedAt), isNull(child.deletedAt));
  // Each child's own columns only (the join is for the visit's window and changes).
  // Timer events, most of a scope's rows, carry no sealed PHI: PostgreSQL writes their
  // change messages itself (the same shape as the others', see `serializedEvents`), one per
  // line after its version, so they are neither parsed nor built nor serialised here.
  const eventChange = sql`(case when ${timerEvents.deletedAt} is not null
      then json_build_object('table', 'timer_events', 'op', 'delete', 'id', ${timerEvents.id}, 'version', ${timerEvents.rowVersion})
      else json_build_object('table', 'timer_events', 'op', 'upsert', 'id', ${timerEvents.id}, 'version', ${timerEvents.rowVersion}, 'row', json_build_object(
        'uuid', ${timerEvents.id},
        'schedule_uuid', ${timerEvents.visitId},
        'event_type', ${timerEvents.eventType},
        'event_time', to_char(${timerEvents.eventTime} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'latitude', ${timerEvents.latitude},
        'longitude', ${timerEvents.longitude},
        'accuracy', ${timerEvents.accuracy}))
    end)::text`;
  // Visits (a quarter of a scope's rows) too, but for their two sealed columns: the database
  // writes each change without them and the sealed values beside it, and the feed opens those
  // and closes the text (`visitChanges`). A line: `<version> D <change>` for a delete, or
  // `<version> U <address_enc|-> <notes_enc|-> <id> <change without its last "}}">`. The row's
  // fields are `visitFieldsOf`'s (test/server/sync/feed-visit-rows.property.test.ts).
  const iso = (c: AnyPgColumn) => sql`to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const place = (lat: AnyPgColumn, lng: AnyPgColumn, accuracy: AnyPgColumn) =>
    sql`case when ${lat} is null or ${lng} is null then null else json_build_object('latitude', ${lat}, 'longitude', ${lng}, 'accuracy', ${accuracy}) end`;
  // REST's minutesOf, operation for operation in IEEE doubles (float8 is one): round((s / 60 +
  // EPSILON) * 10) / 10, with Math.round's ties towards +∞ (PostgreSQL's round(float8) ties to even).
  const minutes = (c: AnyPgColumn) => {
    const x = sql`((${c}::float8 / 60 + 2.220446049250313e-16) * 10)`;
    return sql`(case when ${x} - floor(${x}) >= 0.5 then floor(${x}) + 1 else floor(${x}) end) / 10`;
  };
  const visitLine = sql<string>`${visits.rowVersion} || (case when ${visits.deletedAt} is not null or not (${inWindow})
      then ' D ' || json_build_object('table', 'visits', 'op', 'delete', 'id', ${visits.id}, 'version', ${visits.rowVersion})::text
      else ' U ' || coalesce(${visits.addressEnc}, '-') || ' ' || coalesce(${visits.notesEnc}, '-') || ' ' || ${visits.id} || ' ' || json_build_object(
        'table', 'visits', 'op', 'upsert', 'id', ${visits.id}, 'version', ${visits.rowVersion}, 'row', json_build_object(
          'uuid', ${visits.id},
          'patient_uuid', ${visits.patientId},
          'referral_uuid', ${visits.referralId},
          'visit_date', ${visits.visitDate},
          'start_time', ${visits.startTime},
          'duration_minutes', ${visits.durationMinutes},
          'status', ${visits.status},
          'visit_type', ${visits.visitType},
          'ai_assisted', ${visits.aiAssisted},
          'completed_at', ${iso(visits.completedAt)},
          'evv', json_build_object(
            'travel_started_at', ${iso(visits.travelStartedAt)},
            'arrived_at', ${iso(visits.arrivedAt)},
            'arrival_location', ${place(visits.arrivalLat, visits.arrivalLng, visits.arrivalAccuracy)},
            'documentation_started_at', ${iso(visits.documentationStartedAt)},
            'departed_at', ${iso(visits.departedAt)},
            'departure_location', ${place(visits.departureLat, visits.departureLng, visits.departureAccuracy)},
            'drive_minutes', ${minutes(visits.driveSeconds)},
            'onsite_minutes', ${minutes(visits.onsiteSeconds)},
            'documentation_minutes', ${minutes(visits.documentationSeconds)}),
          'created_at', ${iso(visits.createdAt)},
          'updated_at', ${iso(visits.updatedAt)}))::text
    end)`;
  const visitRows = qb
    .select({ line: visitLine.as('line') })
    .from(visits)
    .where(and(eq(visits.ownerId, user), ofSeat(visits), diff ? or(changed(visits), entered) : and(inWindow, isNull(visits.deletedAt))));
  const events = qb
    .select({ line: sql<string>`${timerEvents.rowVersion} || ' ' || ${eventChange}`.as('line') })
    .from(timerEvents)
    .innerJoin(visits, eq(visits.id, timerEvents.visitId))
    .where(and(eq(timerEvents.ownerId, user), childScope(timerEvents)));
  const notes = qb
    .select(getTableColumns(soapNotes))
    .from(soapNotes)
    .innerJoin(visits, eq(visits.id, soapNotes.visitId))
    .where(and(eq(soapNotes.ownerId, user), childScope(soapNotes)));
  const mileage = qb
    .select(getTableColumns(visitMileage))
    .from(visitMileage)
    .innerJoin(visits, eq(visits.id, visitMileage.visitId))
    .where(and(eq(visitMileage.ownerId, user), childScope(visitMileage)));
  // AI runs of visits in scope, like a visit's other children (docs/sync-protocol.md).
  const aiRuns = qb
    .select(getTableColumns(aiTranscriptions))
    .from(aiTranscriptions)
    .innerJoin(visits, eq(visits.id, aiTranscriptions.visitId))
    .where(and(eq(aiTranscriptions.ownerId, user), childScope(aiTranscriptions)));

  return {
    snapshot: sql<string>`pg_current_snapshot()::text`,
    // The scope: the clinician's time zone, seat (with its organization) and personal overrides.
    time_zone: sql<string | null>`(select ${clinicianSettings.timeZone} from ${clinicianSettings} where ${clinicianSettings.userId} = ${user})`,
    organization: sql<string>`${agg(
      qb
        .select(getTableColumns(organizations))
        .from(organizationMembers)
        .innerJoin(organizations, eq(organizations.id, organizationMembers.organizationId))
        .where(eq(organizationMembers.userId, user)),
    )}::text`,
    feature_overrides: sql<string | null>`(select ${users.featureOverrides}::text from ${users} where ${users.id} = ${user})`,
    // Read here, not through the mutation ledger (which owns the table's writes), because it
    // must be this statement's snapshot: acked_through says what these rows reflect.
    acked: sql<string | number>`coalesce((select ${syncClients.lastMutationId} from ${syncClients} where ${syncClients.userId} = ${user} and ${syncClients.clientId} = ${p('client')}), 0)`,
    patients: sql<string>`${agg(qb.select().from(patients).where(and(eq(patients.ownerId, user), changed(patients), live(patients), ofSeat(patients))))}::text`,
    referrals: sql<string>`${agg(qb.select().from(patientReferrals).where(and(eq(patientReferrals.ownerId, user), changed(patientReferrals), live(patientReferrals), ofSeat(patientReferrals))))}::text`,
    // Visits in the window and new to the device; a changed visit now outside it left the scope.
    visits: sql<string | null>`(select string_agg(t.line, E'\n') from (${visitRows}) t)`,
    events: sql<string | null>`(select string_agg(t.line, E'\n') from (${events}) t)`,
    notes: sql<string>`${agg(notes)}::text`,
    mileage: sql<string>`${agg(mileage)}::text`,
    notifications: sql<string>`${agg(qb.select().from(notifications).where(and(eq(notifications.ownerId, user), changed(notifications), live(notifications))))}::text`,
    ai: sql<string>`${agg(aiRuns)}::text`,
  };
}

type Fields = ReturnType<typeof feedFields>;
type Statement = { [K in keyof Fields]: Fields[K]['_']['type'] };

/** The fields named after their keys, so a row read by `EXECUTE` has the same keys. */
function named(fields: Fields) {
  return Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, field.as(key)])) as { [K in keyof Fields]: SQL.Aliased<Statement[K]> };
}

type Mode = 'diff' | 'full';

/**
 * The two statements, prepared once, so a poke costs one round trip and no planning. On
 * PostgreSQL, a named statement per pooled connection (postgres.js prepares it on first use);
 * on a one-session database (PGlite), which plans every extended-protocol statement again,
 * an SQL-level `PREPARE`, run by `EXECUTE`.
 */
function preparedFeed(db: Db, oneSession: boolean) {
  // No table: the statement is a row of scalar subqueries.
  const one = sql`(select 1) as one`;
  const statements = {
    diff: db.select(named(feedFields('diff'))).from(one).prepare('fieldchart_feed_diff'),
    full: db.select(named(feedFields('full'))).from(one).prepare('fieldchart_feed_full'),
  };
  const executors = {
    diff: sessionPrepared<Statement>(db, 'fieldchart_feed_diff', statements.diff.getQuery()),
    full: sessionPrepared<Statement>(db, 'fieldchart_feed_full', statements.full.getQuery()),
  };
  return async (mode: Mode, values: Record<string, unknown>): Promise<Statement | undefined> => {
    if (!oneSession) return (await statements[mode].execute(values))[0] as Statement | undefined;
    return (await executors[mode](values))[0];
  };
}

export function createFeed(deps: FeedDeps) {
  const { phi } = deps;
  const execute = preparedFeed(deps.db, deps.oneSession ?? false);

  async function run(userId: string, window: Window, since: Cursor | null, clientId: string | undefined): Promise<Statement> {
    const params: Params = { user: userId, client: clientId ?? NO_CLIENT, from: window.from, to: window.to };
    const row = since
      ? await execute('diff', { ...params, since: since.snapshot, sinceFrom: since.windowFrom, sinceTo: since.windowTo })
      : await execute('full', params);
    if (!row) throw new Error('the feed statement answered no row');
    return row;
  }

  return {
    /**
     * Reads the changes since `cursorText` (null: the whole scope). With a `clientId`, also
     * the device's last processed mutation id in the same snapshot: every change of its
     * mutations up to that id is in this read or an earlier one.
     */
    async read(userId: string, cursorText: string | null, now: Date, options: FeedReadOptions = {}): Promise<FeedResult> {
      const previous = decodeCursor(cursorText);
      let reset: FeedResult['reset'] = cursorText === null ? 'first_sync' : previous ? null : 'cursor_unknown';
      let timeZone = options.timeZone ?? DEFAULT_TIME_ZONE;
      let window = windowOf(now, timeZone);
      let since = reset ? null : previous;
      let row = await run(userId, window, since, options.clientId);
      // Rare: the time zone changed (the window was another), or a diff turned out to need a
      // reset (the seat changed, or the cursor is from a snapshot this database has not
      // reached). Read again, as it should have been read; at most twice more.
      for (let attempt = 0; attempt < 2; attempt++) {
        const foundZone = row.time_zone ?? DEFAULT_TIME_ZONE;
        const scopeHash = shortHash({ userId, organizationId: scopeOf(row).organizationId });
        const mustReset: FeedResult['reset'] =
          since && !snapshotPrecedes(since.snapshot, row.snapshot) ? 'cursor_unknown' : since && since.scope !== scopeHash ? 'scope_changed' : null;
        if (foundZone === timeZone && !mustReset) break;
        if (mustReset) {
          reset = mustReset;
          since = null;
        }
        timeZone = foundZone;
        window = windowOf(now, timeZone);
        row = await run(userId, window, since, options.clientId);
      }

      const scope = { ...scopeOf(row), timeZone };
      const scopeHash = shortHash({ userId, organizationId: scope.organizationId });
      const configHash = shortHash(scope.config);
      const changes: Change[] = [];
      const push = (table: Change['table'], id: string, r: Row, body: () => Record<string, unknown>, inScope = true) => {
        if (r.deletedAt || !inScope) changes.push({ table, op: 'delete', id, version: r.rowVersion });
        else changes.push({ table, op: 'upsert', id, version: r.rowVersion, row: body() });
      };

      for (const p of asPatients(row.patients)) {
        push('patients', p.id, p, () => ({
          uuid: p.id,
          ...openPatient(phi, p),
          created_at: p.createdAt.toISOString(),
          updated_at: p.updatedAt.toISOString(),
        }));
      }
      for (const r of asReferrals(row.referrals)) {
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
      for (const n of asNotes(row.notes)) {
        push('soap_notes', n.id, n, () => {
          const { signature: _image, ...note } = soapRecordOf(phi, n);
          return { ...note, schedule_uuid: n.visitId };
        });
      }
      for (const m of asMileage(row.mileage)) {
        push('visit_mileage', m.visitId, m, () => ({
          schedule_uuid: m.visitId,
          total_miles: m.totalMiles,
          travel_miles: m.travelMiles,
          onsite_miles: m.onsiteMiles,
          recorded_at: m.recordedAt.toISOString(),
        }));
      }
      for (const n of asNotifications(row.notifications)) push('notifications', n.id, n, () => notificationRecord(n));
      for (const a of asAiRuns(row.ai)) push('ai_status', a.id, a, () => ({ ...statusRecordOf(phi, a) }));

      if (!since || since.config !== configHash) {
        changes.push({ table: 'organization_config', op: 'upsert', id: userId, version: 0, row: { ...scope.config } });
      }

      const ordered: Array<{ readonly version: number; readonly json: string }> = changes.map((c) => ({ version: c.version, json: JSON.stringify(c) }));
      for (const line of row.events ? row.events.split('\n') : []) {
        const space = line.indexOf(' ');
        ordered.push({ version: Number(line.slice(0, space)), json: line.slice(space + 1) });
      }
      if (row.visits) visitChanges(phi, row.visits, ordered);
      ordered.sort((a, b) => a.version - b.version);
      const serialized = ordered.map((c) => c.json);
      const cursor = encodeCursor({ snapshot: row.snapshot, windowFrom: window.from, windowTo: window.to, scope: scopeHash, config: configHash });
      return {
        reset,
        serialized,
        get changes() {
          return serialized.map((json) => JSON.parse(json) as Change);
        },
        cursor,
        ackedThrough: options.clientId === undefined ? null : Number(row.acked),
        timeZone,
      };
    },
  };
}

/** The visit lines of the statement (see `visitLine`) as changes: the sealed columns opened into each upsert. */
function visitChanges(phi: PhiCrypto, lines: string, out: Array<{ readonly version: number; readonly json: string }>): void {
  for (const line of lines.split('\n')) {
    const space = line.indexOf(' ');
    const version = Number(line.slice(0, space));
    if (line[space + 1] === 'D') {
      out.push({ version, json: line.slice(space + 3) });
      continue;
    }
    const a = line.indexOf(' ', space + 3);
    const b = line.indexOf(' ', a + 1);
    const c = line.indexOf(' ', b + 1);
    const id = line.slice(b + 1, c);
    const open = (sealed: string, column: string) => JSON.stringify(sealed === '-' ? null : phi.open(sealed, 'visits', column, id));
    const address = open(line.slice(space + 3, a), 'address_enc');
    const notes = open(line.slice(a + 1, b), 'notes_enc');
    out.push({ version, json: `${line.slice(c + 1, -2)}, "address" : ${address}, "notes" : ${notes}}}` });
  }
}

/**
 * The scope part of the statement: the seat's organization and the effective configuration,
 * by the same pure resolution GET /my-organization/config uses.
 */
function scopeOf(row: Statement): Omit<FeedScope, 'timeZone'> {
  const [org] = asOrganization(row.organization);
  const overrides = (parseJson(row.feature_overrides) ?? {}) as Parameters<typeof effectiveConfig>[0]['personalOverrides'];
  const config = effectiveConfig({ organization: org ? organizationSettingsOf(org) : null, personalOverrides: overrides });
  return { organizationId: org?.id ?? null, config: { ...config, organization: org ? { uuid: org.id, name: org.name } : null } };
}

/** A cursor from this database's past: its snapshot's xmax is not beyond the current one's. */
function snapshotPrecedes(previous: string, current: string): boolean {
  const xmaxOf = (s: string) => BigInt(s.split(':')[1] ?? '0');
  return xmaxOf(previous) <= xmaxOf(current);
}
