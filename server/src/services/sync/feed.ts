/**
 * The change feed (docs/sync-protocol.md, The change feed): everything in a clinician's scope
 * that the device's snapshot did not see, and the clinician's scope itself, read in one
 * snapshot whose `pg_current_snapshot()` becomes the next cursor.
 *
 * A diff (every poke: the feed runs on every change of a clinician's data) is ONE prepared
 * statement: a statement sees one snapshot from start to end, as a REPEATABLE READ transaction
 * does, so it is exact in one round trip. Each table's rows come back as one JSON array
 * (`json_agg`). A full read (a first sync, a reset: the whole scope, up to 100k rows) is a
 * REPEATABLE READ transaction of two statements, the scope and then every row, streamed: the
 * rows are built and sent while the database is still reading the rest.
 *
 * Rows are mapped to the table's row type by its own column mappers (`rowFromJson`), so the
 * records are built by the same functions as REST's — except timer events (no sealed PHI, most
 * of a scope's rows), whose change messages PostgreSQL writes itself, and visits (the next
 * most), whose messages it writes but for the two sealed columns the feed opens (held to
 * REST's fields by a property).
 */
import { and, eq, fillPlaceholders, getTableColumns, gte, isNull, lte, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import { PgDialect, QueryBuilder, type AnyPgColumn, type PgTable, type SelectedFields } from 'drizzle-orm/pg-core';
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
import { eachRow } from '../../db/each-row.ts';
import { foldPlaceholders, rowFromJson, sessionPrepared } from '../../db/one-statement.ts';
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
  /** Where the diff runs, planned once for all its values (Database.planned); default `db`. */
  readonly planned?: Db;
  /** Told each diff's statement and its values before it runs (a test explains what a poke reads). */
  readonly onDiff?: (statement: { readonly sql: string; readonly params: readonly unknown[] }) => void;
}

/**
 * Every UTC offset and every change of one falls on a quarter hour, so a zone's date is the same
 * throughout each UTC quarter hour: the window is worked out once per zone and quarter hour
 * (formatting a date in a zone costs about 25 µs, and every poke's feed asks before its read).
 */
const QUARTER_HOUR_MS = 15 * 60_000;
const windows = new Map<string, Window>();

export function windowOf(now: Date, timeZone: string): Window {
  const key = `${Math.floor(now.getTime() / QUARTER_HOUR_MS)} ${timeZone}`;
  let window = windows.get(key);
  if (!window) {
    const today = localDate(now, timeZone);
    window = { from: addDays(today, -WINDOW_DAYS_BACK), to: addDays(today, WINDOW_DAYS_AHEAD) };
    // Old quarters are never asked again: start over rather than grow.
    if (windows.size >= 1000) windows.clear();
    windows.set(key, window);
  }
  return window;
}

interface Row {
  readonly rowVersion: number;
  readonly deletedAt: Date | null;
}

type Window = { readonly from: string; readonly to: string };

const qb = new QueryBuilder();
const dialect = new PgDialect();

/** postgres.js parses json columns; PGlite's text cast arrives as a string. */
const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

/** The change lines a select returns (visits, timer events), one text. */
const lines = (query: SQLWrapper): SQL<string | null> => sql<string | null>`(select string_agg(t.line, E'\n') from (${query}) t)`;

/** One JSON array of the rows a select returns. */
const agg = (query: SQLWrapper): SQL => sql`(select coalesce(json_agg(t), '[]'::json) from (${query}) t)`;

/** The statements' parameters: a diff's are the placeholders of a statement prepared once. */
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

/** A diff's values, for a statement of `diffQuery` run outside the feed (the benches). */
export type DiffValues = Params;

/** A statement's parameter: a placeholder (the prepared diff) or a bound value (the full read). */
type Param = (name: keyof Params) => SQL;
const placeholder: Param = (name) => sql`${sql.placeholder(name)}`;
const boundTo =
  (params: Params): Param =>
  (name) =>
    sql`${params[name] ?? null}`;

/** The client id when the caller wants no acked_through (protocol 1): names no device. */
const NO_CLIENT = '00000000-0000-0000-0000-000000000000';

/** The scope: the snapshot, the clinician's time zone, seat (with its organization) and overrides, the device's acked id. */
function scopeFields(p: Param) {
  const user = p('user');
  return {
    snapshot: sql<string>`pg_current_snapshot()::text`,
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
    // must be this snapshot's: acked_through says what these rows reflect.
    acked: sql<string | number>`coalesce((select ${syncClients.lastMutationId} from ${syncClients} where ${syncClients.userId} = ${user} and ${syncClients.clientId} = ${p('client')}), 0)`,
  };
}

/**
 * Each table's rows in scope: those new to a device at a cursor (`diff`) or the whole scope
 * (`full`). Visits and timer events as the change lines PostgreSQL writes, the rest as rows.
 * `alone`: some tables' diff (`streamTable`): a child's rows written since the cursor only, not
 * those of visits placed anew, which come with their visit in a full diff (a visit placed anew
 * makes such a diff give way: `placedAnew`).
 */
function tableQueries(mode: 'diff' | 'full', p: Param, alone = false) {
  const diff = mode === 'diff';
  const user = p('user');
  /** A transaction the device's cursor had not seen. */
  const unseen = (txid: SQLWrapper): SQL =>
    diff ? sql`(${txid} >= pg_snapshot_xmin(${p('since')}::pg_snapshot) and not pg_visible_in_snapshot(${txid}, ${p('since')}::pg_snapshot))` : sql`true`;
  const changed = (t: { txid: AnyPgColumn }): SQL => unseen(t.txid);
  const live = (t: { deletedAt: AnyPgColumn }): SQL | undefined => (diff ? undefined : isNull(t.deletedAt));
  // Rows made under an organization seat are that organization's: in scope only while the
  // user holds that seat (docs/sync-protocol.md, Leaving an organization). A seat change resets
  // the feed (the scope hash), so a diff never sees this change.
  const seat = sql`(select ${organizationMembers.organizationId} from ${organizationMembers} where ${organizationMembers.userId} = ${user})`;
  const ofSeat = (t: { organizationId: AnyPgColumn }): SQL => sql`(${t.organizationId} is null or ${t.organizationId} = ${seat})`;
  const inWindow = and(gte(visits.visitDate, p('from')), lte(visits.visitDate, p('to')), ofSeat(visits));
  // Visits the window took in since the device's cursor: never written, still new to it.
  // Written as the two date ranges the window gained, each an index range: when the window has
  // not moved since the cursor (nearly every poke) both are empty and no visit is read for it.
  const entered = diff
    ? sql`((${visits.visitDate} >= ${p('from')}::date and ${visits.visitDate} <= ${p('to')}::date and ${visits.visitDate} < ${p('sinceFrom')}::date)
        or (${visits.visitDate} >= ${p('from')}::date and ${visits.visitDate} <= ${p('to')}::date and ${visits.visitDate} > ${p('sinceTo')}::date))`
    : sql`true`;
  // A visit's events, note and mileage travel when they changed, or when their visit is new
  // to the device (changed, or taken in by the window). In a diff these are two reads, each led
  // by an index so that a poke costs what changed, not what the window holds: the child's rows
  // written since the cursor (its owner and txid, its visit looked up by key), and the children
  // of the visits new to the device that did not change themselves (so none comes twice), those
  // visits worked out once as an array that is nearly always empty. As one join with an OR
  // across the two tables, the generic plan walked every visit in the window and probed its
  // owner's rows on each poke (160 visits with 640 events: 1.7 ms a diff in psql, 0.3 ms this
  // way). A changed visit's window is a date difference, not a range the planner can walk:
  // given one, it led with the owner's whole window (1,200 visits read on each poke to find
  // none; test/server/sync/feed-diff-work.test.ts).
  const windowHolds = sql`(${visits.visitDate} - ${p('from')}::date) between 0 and (${p('to')}::date - ${p('from')}::date)`;
  // Of the visits written since the cursor (found by txid), those placed anew: inserted, or
  // moved into the scope (migration 0024). A visit written in place — a timer event's status
  // and EVV record — is one the device holds with its children, and they are not sent again;
  // nor are a deleted visit's, which no device shows (a full read leaves them out too).
  const placed = unseen(sql`coalesce(${visits.placedTxid}, ${visits.txid})`);
  const newVisits = sql`array(select ${visits.id} from ${visits} where ${visits.ownerId} = ${user} and ${ofSeat(visits)} and ${visits.deletedAt} is null and ((${changed(visits)} and ${placed} and ${windowHolds}) or ${entered}))`;
  const childRows = (
    child: { ownerId: AnyPgColumn; visitId: AnyPgColumn; txid: AnyPgColumn; deletedAt: AnyPgColumn },
    select: (withVisit: boolean, where: SQL | undefined) => SQLWrapper,
  ): SQLWrapper => {
    if (!diff) return select(true, and(eq(child.ownerId, user), eq(visits.ownerId, user), inWindow, isNull(visits.deletedAt), isNull(child.deletedAt)));
    // A scalar subquery on the visit's key alone, the window tested on the row it finds, so no
    // plan can turn it round to lead with the window's visits. One plan made on stale statistics
    // (captured on PGlite) walked the owner's window for every child row, 0.5 ms each; the
    // drain as a whole did not measure faster for this change, back to back.
    const visitInWindow = sql`coalesce((select ${visits.ownerId} = ${user} and ${inWindow} from ${visits} where ${visits.id} = ${child.visitId}), false)`;
    if (alone) return select(false, and(eq(child.ownerId, user), changed(child), visitInWindow));
    return sql`${select(false, and(eq(child.ownerId, user), changed(child), visitInWindow))} union all ${select(
      false,
      and(eq(child.ownerId, user), sql`${child.visitId} = any(${newVisits})`, sql`not ${changed(child)}`),
    )}`;
  };
  // Each child's own columns only (the join is for the visit's window and changes).
  // Timer events, most of a scope's rows, carry no sealed PHI: PostgreSQL writes their
  // change messages itself (the same shape as the others', see `serializedEvents`), one per
  // line after its version, so they are neither parsed nor built nor serialised here. Written
  // by concatenation: `json_build_object` took twice as long for the same lines (8,000 events,
  // 30 ms against 15 in psql). Ids are uuids and versions integers, which need no quoting beyond
  // their quotes; the other values go through `to_json` as `json_build_object` would put them
  // (test/server/sync/feed-event-lines.property.test.ts holds the two to the same JSON).
  const json = (value: SQLWrapper) => sql`coalesce(to_json(${value})::text, 'null')`;
  /** A time as REST writes it (toISOString: UTC, milliseconds), quoted, or null. */
  const iso = (c: AnyPgColumn) => sql`coalesce('"' || to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`;
  const eventChange = sql`(case when ${timerEvents.deletedAt} is not null
      then '{"table":"timer_events","op":"delete","id":"' || ${timerEvents.id} || '","version":' || ${timerEvents.rowVersion} || '}'
      else '{"table":"timer_events","op":"upsert","id":"' || ${timerEvents.id} || '","version":' || ${timerEvents.rowVersion}
        || ',"row":{"uuid":"' || ${timerEvents.id} || '","schedule_uuid":"' || ${timerEvents.visitId}
        || '","event_type":' || ${json(timerEvents.eventType)} || ',"event_time":' || ${iso(timerEvents.eventTime)}
        || ',"latitude":' || ${json(timerEvents.latitude)} || ',"longitude":' || ${json(timerEvents.longitude)}
        || ',"accuracy":' || ${json(timerEvents.accuracy)} || '}}'
    end)`;
  // Visits (a quarter of a scope's rows) too, but for their two sealed columns: the database
  // writes each change without them and the sealed values beside it, and the feed opens those
  // and closes the text (`visitChanges`). A line: `<version> D <change>` for a delete, or
  // `<version> U <address_enc|-> <notes_enc|-> <id> <change without its last "}}">`. The row's
  // fields are `visitFieldsOf`'s (test/server/sync/feed-visit-rows.property.test.ts).
  // Written by concatenation too (20,000 visits' lines: 173 ms with json_build_object in psql).
  const place = (lat: AnyPgColumn, lng: AnyPgColumn, accuracy: AnyPgColumn) =>
    sql`case when ${lat} is null or ${lng} is null then 'null' else '{"latitude":' || ${json(lat)} || ',"longitude":' || ${json(lng)} || ',"accuracy":' || ${json(accuracy)} || '}' end`;
  // REST's minutesOf, operation for operation in IEEE doubles (float8 is one): round((s / 60 +
  // EPSILON) * 10) / 10, with Math.round's ties towards +∞ (PostgreSQL's round(float8) ties to even).
  const minutes = (c: AnyPgColumn) => {
    const x = sql`((${c}::float8 / 60 + 2.220446049250313e-16) * 10)`;
    return json(sql`(case when ${x} - floor(${x}) >= 0.5 then floor(${x}) + 1 else floor(${x}) end) / 10`);
  };
  const visitLine = sql<string>`${visits.rowVersion} || (case when ${visits.deletedAt} is not null or not (${inWindow})
      then ' D {"table":"visits","op":"delete","id":"' || ${visits.id} || '","version":' || ${visits.rowVersion} || '}'
      else ' U ' || coalesce(${visits.addressEnc}, '-') || ' ' || coalesce(${visits.notesEnc}, '-') || ' ' || ${visits.id}
        || ' {"table":"visits","op":"upsert","id":"' || ${visits.id} || '","version":' || ${visits.rowVersion}
        || ',"row":{"uuid":"' || ${visits.id} || '","patient_uuid":' || ${json(visits.patientId)} || ',"referral_uuid":' || ${json(visits.referralId)}
        || ',"visit_date":' || ${json(visits.visitDate)} || ',"start_time":' || ${json(visits.startTime)}
        || ',"duration_minutes":' || ${json(visits.durationMinutes)} || ',"status":' || ${json(visits.status)}
        || ',"visit_type":' || ${json(visits.visitType)} || ',"ai_assisted":' || ${json(visits.aiAssisted)}
        || ',"completed_at":' || ${iso(visits.completedAt)}
        || ',"evv":{"travel_started_at":' || ${iso(visits.travelStartedAt)} || ',"arrived_at":' || ${iso(visits.arrivedAt)}
        || ',"arrival_location":' || ${place(visits.arrivalLat, visits.arrivalLng, visits.arrivalAccuracy)}
        || ',"documentation_started_at":' || ${iso(visits.documentationStartedAt)} || ',"departed_at":' || ${iso(visits.departedAt)}
        || ',"departure_location":' || ${place(visits.departureLat, visits.departureLng, visits.departureAccuracy)}
        || ',"drive_minutes":' || ${minutes(visits.driveSeconds)} || ',"onsite_minutes":' || ${minutes(visits.onsiteSeconds)}
        || ',"documentation_minutes":' || ${minutes(visits.documentationSeconds)}
        || '},"created_at":' || ${iso(visits.createdAt)} || ',"updated_at":' || ${iso(visits.updatedAt)} || '}}'
    end)`;
  // Whether a visit was placed anew since the cursor: its children are owed with it, which only
  // the full diff sends (any visit of the owner: the window is not consulted, a diff of some
  // tables gives way to the full diff a little more often than it must).
  const placedAnew = sql<number>`(case when exists(select 1 from ${visits} where ${visits.ownerId} = ${user} and ${changed(visits)} and ${placed}) then 1 else 0 end)`;
  const visitRows = qb
    .select({ line: visitLine.as('line') })
    .from(visits)
    .where(and(eq(visits.ownerId, user), ofSeat(visits), diff ? or(changed(visits), entered) : and(inWindow, isNull(visits.deletedAt))));
  // A child's select, joined to its visit or not (the first read of a diff looks the visit up).
  const childSelect =
    <T extends PgTable & { visitId: AnyPgColumn }>(table: T, fields: SelectedFields) =>
    (withVisit: boolean, where: SQL | undefined): SQLWrapper => {
      const q = qb.select(fields).from(table as PgTable).$dynamic();
      if (withVisit) q.innerJoin(visits, eq(visits.id, table.visitId));
      return q.where(where);
    };
  const events = childRows(timerEvents, childSelect(timerEvents, { line: sql<string>`${timerEvents.rowVersion} || ' ' || ${eventChange}`.as('line') }));
  const notes = childRows(soapNotes, childSelect(soapNotes, getTableColumns(soapNotes)));
  const mileage = childRows(visitMileage, childSelect(visitMileage, getTableColumns(visitMileage)));
  // AI runs of visits in scope, like a visit's other children (docs/sync-protocol.md).
  const aiRuns = childRows(aiTranscriptions, childSelect(aiTranscriptions, getTableColumns(aiTranscriptions)));

  return {
    patients: qb.select().from(patients).where(and(eq(patients.ownerId, user), changed(patients), live(patients), ofSeat(patients))),
    patient_referrals: qb
      .select()
      .from(patientReferrals)
      .where(and(eq(patientReferrals.ownerId, user), changed(patientReferrals), live(patientReferrals), ofSeat(patientReferrals))),
    soap_notes: notes,
    visit_mileage: mileage,
    notifications: qb.select().from(notifications).where(and(eq(notifications.ownerId, user), changed(notifications), live(notifications))),
    ai_status: aiRuns,
    // Visits in the window and new to the device; a changed visit now outside it left the scope.
    visits: visitRows,
    timer_events: events,
    placedAnew,
  };
}

type RowTable = 'patients' | 'patient_referrals' | 'soap_notes' | 'visit_mileage' | 'notifications' | 'ai_status';
type LineTable = 'visits' | 'timer_events';
const ROW_TABLES: readonly RowTable[] = ['patients', 'patient_referrals', 'soap_notes', 'visit_mileage', 'notifications', 'ai_status'];
const LINE_TABLES: readonly LineTable[] = ['visits', 'timer_events'];

/** A table of the feed: its new rows are one field of the diff. */
export type FeedTable = RowTable | LineTable;
export const FEED_TABLES: readonly FeedTable[] = [...ROW_TABLES, ...LINE_TABLES];

/** The feed table a poke names (migration 0026: its trigger's table), or null for any other. */
export function pokeTableOf(tableName: string): FeedTable | null {
  const table = tableName === 'ai_transcriptions' ? 'ai_status' : tableName;
  return (FEED_TABLES as readonly string[]).includes(table) ? (table as FeedTable) : null;
}

/**
 * A diff's fields: the scope and each of `tables`' new rows (one JSON array, or one text of
 * lines, per table). `alone` (`streamTable`): those tables' rows read by themselves, and with
 * visits whether one was placed anew (its children are then the full diff's to send).
 */
function diffFields(tables: readonly FeedTable[] = FEED_TABLES, alone = false) {
  const queries = tableQueries('diff', placeholder, alone);
  const read = <T extends FeedTable>(of: readonly T[]) => of.filter((t) => tables.includes(t));
  const rows = Object.fromEntries(read(ROW_TABLES).map((t) => [t, sql<string>`${agg(queries[t])}::text`])) as Record<RowTable, SQL<string>>;
  const lineFields = Object.fromEntries(read(LINE_TABLES).map((t) => [t, lines(queries[t])])) as Record<LineTable, SQL<string | null>>;
  const placed: { placed_anew?: SQL<number> } = alone && tables.includes('visits') ? { placed_anew: queries.placedAnew } : {};
  return { ...scopeFields(placeholder), ...rows, ...lineFields, ...placed };
}

/**
 * The diff's statement, with each placeholder one parameter (the user is named in every table's
 * query: 79 bound values became 7, parsed once by PostgreSQL per poke instead of once per use).
 * `tables` keeps the scope and those tables' fields only: the feed reads them all;
 * bench/feed-diff-tables.ts measures what a statement of fewer tables would cost a poke.
 */
export function diffQuery(tables: readonly FeedTable[] = FEED_TABLES): { sql: string; params: unknown[] } {
  return foldPlaceholders(dialect.sqlToQuery(qb.select(named(diffFields(tables))).from(ONE).getSQL()));
}

/** Some poked tables' diff (`streamTable`): the scope and those tables' rows, read alone. */
export function tableDiffQuery(tables: readonly FeedTable[]): { sql: string; params: unknown[] } {
  return foldPlaceholders(dialect.sqlToQuery(qb.select(named(diffFields(tables, true))).from(ONE).getSQL()));
}

/**
 * The whole scope's rows as one stream of `(table, line)`: a row as JSON, or a visit's or
 * timer event's change line. Table after table, the biggest (timer events) last.
 */
function fullRows(p: Param): SQL {
  const tables = tableQueries('full', p);
  const json = (table: RowTable) => sql`select ${sql.raw(`'${table}'`)} as table, row_to_json(t)::text as line from (${tables[table]}) t`;
  const lines = (table: LineTable) => sql`select ${sql.raw(`'${table}'`)} as table, t.line from (${tables[table]}) t`;
  return sql.join([...ROW_TABLES.map(json), lines('visits'), lines('timer_events')], sql` union all `);
}

/** The fields named after their keys, so a row read by `EXECUTE` has the same keys. */
function named<F extends Record<string, SQL>>(fields: F) {
  return Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, field.as(key)])) as { [K in keyof F]: SQL.Aliased<F[K]['_']['type']> };
}

type Statement<F extends Record<string, SQL>> = { [K in keyof F]: F[K]['_']['type'] };
type ScopeRow = Statement<ReturnType<typeof scopeFields>>;
/** The full diff's row (`placed_anew` is a tables' diff's only). */
type DiffRow = Statement<Omit<ReturnType<typeof diffFields>, 'placed_anew'>>;
/** Some tables' diff: the scope, those tables' fields, and with visits whether one was placed anew. */
type TableDiffRow = Omit<DiffRow, FeedTable> & Partial<Pick<DiffRow, FeedTable>> & { readonly placed_anew?: number | string };

/** No table: a statement that is a row of scalar subqueries. */
const ONE = sql`(select 1) as one`;

/**
 * The diff, prepared once, so a poke costs one round trip and no planning. On PostgreSQL, a
 * named statement per pooled connection (postgres.js prepares it on first use); on a
 * one-session database (PGlite), which plans every extended-protocol statement again, an
 * SQL-level `PREPARE`, run by `EXECUTE`.
 */
function preparedDiff(db: Db, oneSession: boolean, onDiff: FeedDeps['onDiff']) {
  const query = diffQuery();
  const execute = prepareDiffStatement<DiffRow>(db, oneSession, 'fieldchart_feed_diff', query);
  return async (values: Params): Promise<DiffRow> => {
    onDiff?.({ sql: query.sql, params: fillPlaceholders(query.params, values) });
    const [row] = await execute(values);
    if (!row) throw new Error('the feed statement answered no row');
    return row;
  };
}

/**
 * Each set of poked tables' diff (`tableDiffQuery`), prepared as the full diff is, on its first
 * poke; named by the set (a bit per table), so at most 255 statements, a handful in practice.
 */
function preparedTableDiffs(db: Db, oneSession: boolean, onDiff: FeedDeps['onDiff']) {
  const statements = new Map<number, { query: { sql: string; params: unknown[] }; execute: (values: DiffValues) => Promise<TableDiffRow[]> }>();
  return async (tables: readonly FeedTable[], values: Params): Promise<TableDiffRow> => {
    const set = FEED_TABLES.reduce((bits, table, i) => (tables.includes(table) ? bits | (1 << i) : bits), 0);
    let statement = statements.get(set);
    if (!statement) {
      const query = tableDiffQuery(FEED_TABLES.filter((t) => tables.includes(t)));
      statement = { query, execute: prepareDiffStatement<TableDiffRow>(db, oneSession, `fieldchart_feed_diff_${set}`, query) };
      statements.set(set, statement);
    }
    onDiff?.({ sql: statement.query.sql, params: fillPlaceholders(statement.query.params, values) });
    const [row] = await statement.execute(values);
    if (!row) throw new Error('the feed statement answered no row');
    return row;
  };
}

/** A statement of `diffQuery` prepared under `name`, as the feed prepares its diff; run with a diff's values. */
export function prepareDiffStatement<R>(db: Db, oneSession: boolean, name: string, query: { sql: string; params: unknown[] }): (values: DiffValues) => Promise<R[]> {
  const statement = oneSession ? null : db._.session.prepareQuery(query, undefined, name, false);
  return statement ? async (values) => rowsOf<R>(await statement.execute(values)) : sessionPrepared<R>(db, name, query);
}

/** A change as it travels, with the version it is ordered by. */
type Built = { readonly version: number; readonly json: string };

interface Builders {
  readonly rows: Record<RowTable, (json: Record<string, unknown>) => Built>;
  readonly lines: Record<LineTable, (line: string) => Built>;
}

/** The change message of each table's row (as JSON) or line, by the same record functions as REST. */
function changeBuilders(phi: PhiCrypto): Builders {
  const change = (table: Change['table'], id: string, r: Row, body: () => Record<string, unknown>): Built => ({
    version: r.rowVersion,
    json: JSON.stringify(r.deletedAt ? { table, op: 'delete', id, version: r.rowVersion } : { table, op: 'upsert', id, version: r.rowVersion, row: body() }),
  });
  const rows: Record<RowTable, (json: Record<string, unknown>) => Built> = {
    patients(json) {
      const p = rowFromJson(patients, json);
      return change('patients', p.id, p, () => ({ uuid: p.id, ...openPatient(phi, p), created_at: p.createdAt.toISOString(), updated_at: p.updatedAt.toISOString() }));
    },
    patient_referrals(json) {
      const r = rowFromJson(patientReferrals, json);
      return change('patient_referrals', r.id, r, () => ({
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
    },
    soap_notes(json) {
      const n = rowFromJson(soapNotes, json);
      return change('soap_notes', n.id, n, () => {
        const { signature: _image, ...note } = soapRecordOf(phi, n);
        return { ...note, schedule_uuid: n.visitId };
      });
    },
    visit_mileage(json) {
      const m = rowFromJson(visitMileage, json);
      return change('visit_mileage', m.visitId, m, () => ({
        schedule_uuid: m.visitId,
        total_miles: m.totalMiles,
        travel_miles: m.travelMiles,
        onsite_miles: m.onsiteMiles,
        recorded_at: m.recordedAt.toISOString(),
      }));
    },
    notifications(json) {
      const n = rowFromJson(notifications, json);
      return change('notifications', n.id, n, () => notificationRecord(n));
    },
    ai_status(json) {
      const a = rowFromJson(aiTranscriptions, json);
      return change('ai_status', a.id, a, () => ({ ...statusRecordOf(phi, a) }));
    },
  };
  return {
    rows,
    lines: {
      visits: (line) => visitChange(phi, line),
      timer_events(line) {
        const space = line.indexOf(' ');
        return { version: Number(line.slice(0, space)), json: line.slice(space + 1) };
      },
    },
  };
}

/** Where a read's changes go as they are built: the socket's frames, or a list. */
export interface FeedSink {
  /** The read answers the whole scope: called before any of its changes. */
  reset(reason: NonNullable<FeedResult['reset']>): void;
  /** One change, serialised as it travels. */
  change(json: string): void;
}

/** What a read ends with, once its changes have gone to the sink. */
export type FeedEnd = Omit<FeedResult, 'serialized' | 'changes'> & { readonly count: number };

export interface TableReadOptions {
  /** The time zone the previous read found (see `FeedReadOptions`). */
  readonly timeZone?: string;
  /** Protocol 2: the device, and its last processed mutation as the last full read found it. */
  readonly clientId?: string;
  readonly ackedThrough?: number;
}

/** What a table's diff ends with: the device's cursor is unchanged, the table read up to `snapshot`. */
export interface TableFeedEnd {
  readonly count: number;
  /** The snapshot that read the table: the table's next diff starts from it. */
  readonly snapshot: string;
}

export function createFeed(deps: FeedDeps) {
  const { db, phi } = deps;
  const build = changeBuilders(phi);
  const runDiff = preparedDiff(deps.planned ?? db, deps.oneSession ?? false, deps.onDiff);
  const runTableDiff = preparedTableDiffs(deps.planned ?? db, deps.oneSession ?? false, deps.onDiff);

  /**
   * The whole scope in one REPEATABLE READ snapshot: the scope first (its time zone sets the
   * window), then every table's rows handed to the sink as they come off the wire, so that
   * building and sending them overlaps the database's reading. Changes come table by table,
   * not by version: within one snapshot each row comes once, and a device applies the unit
   * whole (docs/sync-protocol.md, Batches and checkpoints).
   */
  async function full(userId: string, clientId: string | undefined, now: Date, reset: NonNullable<FeedResult['reset']>, sink: FeedSink): Promise<FeedEnd> {
    sink.reset(reset);
    let count = 0;
    const handle = ({ table, line }: FullRow) => {
      sink.change((isLineTable(table) ? build.lines[table](line) : build.rows[table](JSON.parse(line) as Record<string, unknown>)).json);
      count++;
    };
    // On the embedded database a transaction holds every other request until it ends: there the
    // rows are built after it, as a diff's are.
    const later: FullRow[] | null = deps.oneSession ? [] : null;
    const end = await db.transaction(
      async (tx) => {
        const bound = (window: Window) => boundTo({ user: userId, client: clientId ?? NO_CLIENT, from: window.from, to: window.to });
        const [row] = (await tx.select(named(scopeFields(bound({ from: '', to: '' })))).from(ONE)) as ScopeRow[];
        if (!row) throw new Error('the feed statement answered no row');
        const { scope, hashes } = scopeAndHashes(userId, row);
        const timeZone = row.time_zone ?? DEFAULT_TIME_ZONE;
        const window = windowOf(now, timeZone);
        sink.change(JSON.stringify(configChange(userId, scope)));
        count++;
        await eachRow<FullRow>(tx, fullRows(bound(window)), later ? (r) => later.push(r) : handle);
        return { reset, timeZone, ackedThrough: clientId === undefined ? null : Number(row.acked), cursor: cursorOf(row.snapshot, window, hashes) };
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
    later?.forEach(handle);
    return { ...end, count };
  }

  return {
    /**
     * Sends the changes since `cursorText` (null: the whole scope) to `sink`. With a
     * `clientId`, also reads the device's last processed mutation id in the same snapshot:
     * every change of its mutations up to that id is in this read or an earlier one.
     */
    async stream(userId: string, cursorText: string | null, now: Date, options: FeedReadOptions, sink: FeedSink): Promise<FeedEnd> {
      const since = decodeCursor(cursorText);
      if (!since) return full(userId, options.clientId, now, cursorText === null ? 'first_sync' : 'cursor_unknown', sink);
      let timeZone = options.timeZone ?? DEFAULT_TIME_ZONE;
      let window = windowOf(now, timeZone);
      const diff = () =>
        runDiff({ user: userId, client: options.clientId ?? NO_CLIENT, from: window.from, to: window.to, since: since.snapshot, sinceFrom: since.windowFrom, sinceTo: since.windowTo });
      let row = await diff();
      // Rare: the diff turns out to need a reset (the seat changed, or the cursor is from a
      // snapshot this database has not reached), or the time zone changed (the window was
      // another): read again, as it should have been read; at most twice more for the zone.
      let { scope, hashes } = scopeAndHashes(userId, row);
      for (let attempt = 0; ; attempt++) {
        if (!snapshotPrecedes(since.snapshot, row.snapshot)) return full(userId, options.clientId, now, 'cursor_unknown', sink);
        if (since.scope !== hashes.scope) return full(userId, options.clientId, now, 'scope_changed', sink);
        const foundZone = row.time_zone ?? DEFAULT_TIME_ZONE;
        if (foundZone === timeZone || attempt === 2) break;
        timeZone = foundZone;
        window = windowOf(now, timeZone);
        row = await diff();
        ({ scope, hashes } = scopeAndHashes(userId, row));
      }

      const ordered: Built[] = [];
      if (since.config !== hashes.config) ordered.push({ version: 0, json: JSON.stringify(configChange(userId, scope)) });
      for (const table of ROW_TABLES) for (const json of parseJson(row[table]) as Array<Record<string, unknown>>) ordered.push(build.rows[table](json));
      for (const table of ['visits', 'timer_events'] as const) for (const line of row[table] ? row[table].split('\n') : []) ordered.push(build.lines[table](line));
      // A diff is a handful of rows, sent in the order they were written.
      ordered.sort((a, b) => a.version - b.version);
      for (const c of ordered) sink.change(c.json);
      return {
        reset: null,
        count: ordered.length,
        timeZone,
        ackedThrough: options.clientId === undefined ? null : Number(row.acked),
        cursor: cursorOf(row.snapshot, window, hashes),
      };
    },

    /**
     * The poked tables alone: their rows new since `since` (the snapshot of these tables' last
     * diff since the cursor, or null for the cursor's own), without the other tables' statement
     * parts (a poke of one table costs about a primary-key read more than the scope:
     * bench/README.md, feed-diff-tables). The device's cursor does not move — the other tables
     * were not read — so a full diff later sends these rows again, as they are then, and a device
     * takes them as it takes any upsert. Null, with nothing sent, when only the full diff can
     * answer: the cursor is not this server's or from a snapshot not reached; the seat,
     * configuration or time zone changed; the window moved; a visit was placed anew (its children
     * are owed with it); or — with a `clientId` — the device's last processed mutation is not
     * `ackedThrough` (its mutations applied meanwhile, over HTTP say: only a full diff answers for
     * them). The caller then runs `stream`.
     */
    async streamTable(userId: string, tables: readonly FeedTable[], cursorText: string, since: string | null, now: Date, options: TableReadOptions, sink: Pick<FeedSink, 'change'>): Promise<TableFeedEnd | null> {
      const cursor = decodeCursor(cursorText);
      if (!cursor) return null;
      const timeZone = options.timeZone ?? DEFAULT_TIME_ZONE;
      const window = windowOf(now, timeZone);
      if (window.from !== cursor.windowFrom || window.to !== cursor.windowTo) return null;
      const from = since ?? cursor.snapshot;
      // The window is the cursor's: the visits it took in since (none) are not looked for.
      const row = await runTableDiff(tables, { user: userId, client: options.clientId ?? NO_CLIENT, from: window.from, to: window.to, since: from, sinceFrom: window.from, sinceTo: window.to });
      if (!snapshotPrecedes(from, row.snapshot) || (row.time_zone ?? DEFAULT_TIME_ZONE) !== timeZone) return null;
      if (options.clientId !== undefined && Number(row.acked) !== options.ackedThrough) return null;
      const { hashes } = scopeAndHashes(userId, row);
      if (hashes.scope !== cursor.scope || hashes.config !== cursor.config) return null;
      if (tables.includes('visits') && Number(row.placed_anew) !== 0) return null;
      const ordered: Built[] = [];
      for (const table of tables) {
        if (isLineTable(table)) for (const line of row[table] ? row[table].split('\n') : []) ordered.push(build.lines[table](line));
        else for (const json of parseJson(row[table]) as Array<Record<string, unknown>>) ordered.push(build.rows[table](json));
      }
      ordered.sort((a, b) => a.version - b.version);
      for (const c of ordered) sink.change(c.json);
      return { count: ordered.length, snapshot: row.snapshot };
    },

    /** `stream`, its changes gathered into the result. */
    async read(userId: string, cursorText: string | null, now: Date, options: FeedReadOptions = {}): Promise<FeedResult> {
      const serialized: string[] = [];
      const end = await this.stream(userId, cursorText, now, options, { reset: () => {}, change: (json) => serialized.push(json) });
      return {
        reset: end.reset,
        serialized,
        get changes() {
          return serialized.map((json) => JSON.parse(json) as Change);
        },
        cursor: end.cursor,
        ackedThrough: end.ackedThrough,
        timeZone: end.timeZone,
      };
    },
  };
}

type FullRow = { readonly table: RowTable | LineTable; readonly line: string };
const isLineTable = (table: string): table is LineTable => (LINE_TABLES as readonly string[]).includes(table);

/** The `organization_config` row: sent with every full read, and with a diff when the configuration changed. */
function configChange(userId: string, scope: Omit<FeedScope, 'timeZone'>): Change {
  return { table: 'organization_config', op: 'upsert', id: userId, version: 0, row: { ...scope.config } };
}

/** The cursor's scope hash (the user and their seat) and configuration hash. */
type ScopeHashes = { readonly scope: string; readonly config: string };

/**
 * The scope and its hashes as a statement's scope columns give them, kept for the next read of
 * the same columns: nearly every poke finds them unchanged, and working them out (the
 * organization's row decoded, the configuration resolved, two hashes) cost ~30 µs a poke.
 */
const scopes = new Map<string, { readonly scope: Omit<FeedScope, 'timeZone'>; readonly hashes: ScopeHashes }>();

function scopeAndHashes(userId: string, row: Pick<ScopeRow, 'organization' | 'feature_overrides'>) {
  const key = `${userId}\n${row.organization}\n${row.feature_overrides ?? ''}`;
  let known = scopes.get(key);
  if (!known) {
    const scope = scopeOf(row);
    known = { scope, hashes: hashesOf(userId, scope) };
    // Bounded: a node with more clinicians than this, or old configurations, start it over.
    if (scopes.size >= 1000) scopes.clear();
    scopes.set(key, known);
  }
  return known;
}

function hashesOf(userId: string, scope: Omit<FeedScope, 'timeZone'>): ScopeHashes {
  return { scope: shortHash({ userId, organizationId: scope.organizationId }), config: shortHash(scope.config) };
}

function cursorOf(snapshot: string, window: Window, hashes: ScopeHashes): string {
  return encodeCursor({ snapshot, windowFrom: window.from, windowTo: window.to, scope: hashes.scope, config: hashes.config });
}

/** A visit line of the statements (see `visitLine`) as a change: the sealed columns opened into its upsert. */
function visitChange(phi: PhiCrypto, line: string): Built {
  const space = line.indexOf(' ');
  const version = Number(line.slice(0, space));
  if (line[space + 1] === 'D') return { version, json: line.slice(space + 3) };
  const a = line.indexOf(' ', space + 3);
  const b = line.indexOf(' ', a + 1);
  const c = line.indexOf(' ', b + 1);
  const id = line.slice(b + 1, c);
  const open = (sealed: string, column: string) => JSON.stringify(sealed === '-' ? null : phi.open(sealed, 'visits', column, id));
  const address = open(line.slice(space + 3, a), 'address_enc');
  const notes = open(line.slice(a + 1, b), 'notes_enc');
  return { version, json: `${line.slice(c + 1, -2)}, "address" : ${address}, "notes" : ${notes}}}` };
}

/**
 * The scope part of a read: the seat's organization and the effective configuration, by the
 * same pure resolution GET /my-organization/config uses.
 */
function scopeOf(row: Pick<ScopeRow, 'organization' | 'feature_overrides'>): Omit<FeedScope, 'timeZone'> {
  const [json] = parseJson(row.organization) as Array<Record<string, unknown>>;
  const org = json ? rowFromJson(organizations, json) : null;
  const overrides = (parseJson(row.feature_overrides) ?? {}) as Parameters<typeof effectiveConfig>[0]['personalOverrides'];
  const config = effectiveConfig({ organization: org ? organizationSettingsOf(org) : null, personalOverrides: overrides });
  return { organizationId: org?.id ?? null, config: { ...config, organization: org ? { uuid: org.id, name: org.name } : null } };
}

/** A cursor from this database's past: its snapshot's xmax is not beyond the current one's. */
function snapshotPrecedes(previous: string, current: string): boolean {
  const xmaxOf = (s: string) => BigInt(s.split(':')[1] ?? '0');
  return xmaxOf(previous) <= xmaxOf(current);
}
