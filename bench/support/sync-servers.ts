/**
 * The server side of the sync benches, in a process of their own (the load generator must not
 * share their event loop): a real Fieldchart server started as the test suite starts it
 * (support/server-pair.ts: PGlite, or PostgreSQL with BENCH_DATABASE_URL — a throwaway
 * database created from it and dropped afterwards), and, with BENCH_SYNC_HOCUSPOCUS=1, two
 * Hocuspocus servers for the draft fan-out comparison (in memory, and persisting to the same
 * database). Everything listens on 127.0.0.1.
 *
 * The parent drives it over IPC: `{ ready: SyncServers }` once listening, then requests
 * `{ rpc, cmd, args }` answered with `{ rpc, ok, result | error }` (seeding, the in-database
 * baselines, CPU profiles of this process). `'stop'`, or the parent going away, closes all.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { Session } from 'node:inspector/promises';
import { and, eq, gte, isNull, lte, sql, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { patientReferrals, patients, soapNotes, timerEvents, visitMileage, visits } from '@fieldchart/schema/db';
import { startServerPair } from './server-pair.ts';
import { recordsetShape, type RecordsetRow } from '../../server/src/db/recordset.ts';
import { sealPatient, openPatient } from '../../server/src/services/patients/patient-codec.ts';
import type { AuditContext, AuditEntry } from '../../server/src/services/audit/audit-log.ts';
import { createdFields } from '../../server/src/services/patients/new-patient.ts';
import { soapRecordOf, visitFieldsOf } from '../../server/src/services/visits/visit-records.ts';
import { windowOf } from '../../server/src/services/sync/feed.ts';
import { addDays } from '@fieldchart/schema/rules';
import { startHocuspocusPair, type HocuspocusPair } from './sync-hocuspocus.ts';

export interface SyncServers {
  readonly backend: 'pglite' | 'postgres';
  /** Origin of the Fieldchart server. */
  readonly apiOrigin: string;
  readonly apiPrefix: string;
  /** ws:// URL of the sync channel. */
  readonly syncUrl: string;
  /** ws:// URLs of the Hocuspocus servers, when BENCH_SYNC_HOCUSPOCUS=1. */
  readonly hocuspocus: { readonly memory: string; readonly database: string } | null;
}

export interface Account {
  readonly userId: string;
  readonly token: string;
}

/** The IPC requests this process answers; see `rpc` in sync-peer.ts. */
export interface SyncRpc {
  /** `fieldchart seed --demo` (services.demoSeed through the operator operation), signed in. */
  'seed-demo': { args: Record<string, never>; result: Account & { visits: number } };
  /** A fresh registered clinician. */
  register: { args: Record<string, never>; result: Account };
  /**
   * Bulk rows in one clinician's scope, PHI sealed with the server's key ring exactly as the
   * services seal it: patients (each with an open referral), visits spread over the sync
   * window, and `eventsPerVisit` timer events per visit (start_travel, arrive, …).
   */
  'seed-bulk': {
    args: { userId: string; patients: number; visits: number; eventsPerVisit: number; withEvents?: boolean };
    result: { rows: number; ms: number; patientIds: string[]; visitIds: string[] };
  };
  /**
   * The reconcile baseline: the rows an outbox of mutations creates (timer events, each
   * visit's last mileage, patients sealed beforehand, their referrals) written with one
   * batched INSERT per table in one transaction; `ms` times that transaction only. `via`:
   * `recordset`, each table's rows as one jsonb parameter read by `jsonb_to_recordset` (how the
   * server's own batch writers send rows: db/recordset.ts); `values`, drizzle's multi-row
   * VALUES, one parameter per cell (cut at 4,000 rows for the parameter limit), which spends
   * about a second of the server's CPU building and sending 10k rows' parameters;
   * `recordset+audit`, the recordset inserts and then the audit entry each mutation writes under
   * the REST rules, chained by the one statement a set's entries go in (`recordSucceeded`).
   */
  'insert-rows': {
    args: { userId: string; via: 'recordset' | 'values' | 'recordset+audit'; mutations: ReadonlyArray<{ name: string; args: Record<string, unknown> }> };
    result: { rows: number; ms: number };
  };
  /** The initial-sync baseline: the feed's rows for `userId` (all but the one organization_config row) read by plain selects (and, with `open`, decrypted). */
  'select-scope': { args: { userId: string; open: boolean }; result: { rows: number; ms: number } };
  /** LISTEN/NOTIFY round trips on the server's database: pg_notify in a transaction → the listener has it. */
  'notify-rtt': { args: { count: number; warmup: number }; result: { latenciesMs: number[] } };
  /**
   * Write → device beside its floor, both timed in this process on the same clock, one after
   * the other (same load): `write` = a transaction updating one mileage row (its trigger
   * pokes the owner) → a websocket device of that owner, in this process, has the `changes`
   * message carrying it; `floor` = pg_notify in a transaction → the LISTEN callback → one
   * primary-key read of that row → one websocket send of it as a `changes` frame → the client
   * in this process has it (parsed). The device is synced (`synced` received) before each write.
   * `…TxMs`: each side's own transaction, until its COMMIT is answered (the rest of each
   * latency is what follows the commit).
   */
  'write-to-device': {
    args: { userId: string; token: string; visitId: string; count: number; warmup: number };
    result: { floorMs: number[]; writeMs: number[]; floorTxMs: number[]; writeTxMs: number[] };
  };
  /**
   * CPU used so far, in ms: this process (the server; on PGlite its database too, which runs
   * in this process's threads) and, on PostgreSQL, the server's database backends (their
   * /proc stat; Linux only, null elsewhere). Differences of two readings time one phase.
   */
  cpu: { args: Record<string, never>; result: { serverMs: number; databaseMs: number | null } };
  'profile-start': { args: Record<string, never>; result: null };
  /** Stops the CPU profile and writes it (a .cpuprofile, as node --cpu-prof writes). */
  'profile-stop': { args: { file: string }; result: { file: string } };
}

if (!process.send) throw new Error('sync-servers runs as a child process of a bench script');

const { backend, server, stop: stopPair } = await startServerPair();
// Imported after the pair has set TEST_DATABASE_URL.
const { API, newAccount } = await import('../../test/helpers/test-server.ts');
const { operationContext, runOperation } = await import('@fieldchart/server');
const { services, database } = server.runtime;
const db = services.unitOfWork.db;
const phi = services.phi;

let hocuspocus: HocuspocusPair | null = null;
if (process.env.BENCH_SYNC_HOCUSPOCUS === '1') hocuspocus = await startHocuspocusPair({ db, phi });

let stopping: Promise<void> | null = null;
const stop = () =>
  (stopping ??= (async () => {
    await hocuspocus?.close().catch((err: Error) => console.error(`closing hocuspocus: ${err.message}`));
    await stopPair();
  })());
process.on('message', (m) => m === 'stop' && void stop());
process.on('disconnect', () => void stop());

const chunks = <T>(list: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
};

let session: Session | null = null;

/** One INSERT of `rows` read from one jsonb parameter (db/recordset.ts), the floor's `recordset` way. */
function insertRecordset<T extends PgTable, K extends keyof T['_']['columns'] & string>(table: T, keys: readonly K[], rows: ReadonlyArray<RecordsetRow<T, K>>): SQL {
  const shape = recordsetShape(table, keys);
  return sql`insert into ${table} (${shape.columns}) select ${shape.values} from ${shape.from(rows)}`;
}
// Every column the `values` way sets, so both ways write the same rows.
const TIMER_EVENT_KEYS = ['visitId', 'ownerId', 'eventType', 'eventTime', 'latitude', 'longitude', 'accuracy', 'createdAt'] as const;
const MILEAGE_KEYS = ['visitId', 'ownerId', 'totalMiles', 'travelMiles', 'onsiteMiles', 'recordedAt', 'createdAt', 'updatedAt'] as const;
const PATIENT_KEYS = ['id', 'ownerId', 'firstNameEnc', 'lastNameEnc', 'emailEnc', 'phoneEnc', 'addressEnc', 'nameSearch', 'nameSearchKey', 'createdAt', 'updatedAt'] as const;
const REFERRAL_KEYS = ['id', 'patientId', 'ownerId', 'status', 'discipline', 'diagnosisCodes', 'orderedFrequency', 'createdAt', 'updatedAt'] as const;

const handlers: { [K in keyof SyncRpc]: (args: SyncRpc[K]['args']) => Promise<SyncRpc[K]['result']> } = {
  async 'seed-demo'() {
    const seeded = (await runOperation(operationContext(services, database), 'seed.demo', {})) as {
      email: string;
      password: string;
      user_uuid: string;
      visits: { total: number };
    };
    const signIn = await server.api('POST', '/sign-in', { body: { email: seeded.email, password: seeded.password } });
    const token = signIn.body?.data?.token as string | undefined;
    if (!token) throw new Error(`demo sign-in failed: ${signIn.status}`);
    return { userId: seeded.user_uuid, token, visits: seeded.visits.total };
  },

  async register() {
    const res = await server.api('POST', '/register', { body: newAccount() });
    if (res.status !== 200) throw new Error(`register failed: ${res.status}`);
    return { userId: res.body.data.user.uuid as string, token: res.body.data.token as string };
  },

  async 'seed-bulk'({ userId, patients: nPatients, visits: nVisits, eventsPerVisit, withEvents = true }) {
    const started = performance.now();
    const { time_zone: timeZone } = await services.clinicianSettings.get(userId);
    const window = windowOf(new Date(), timeZone);
    // A day inside the window at each end: the window moves at midnight in the clinician's zone.
    const firstDay = addDays(window.from, 1);
    const days = Math.max(1, Math.round((Date.parse(window.to) - Date.parse(firstDay)) / 86_400_000));
    const now = new Date();
    const patientIds = Array.from({ length: nPatients }, () => randomUUID());
    const referralIds = patientIds.map(() => randomUUID());
    const visitIds = Array.from({ length: nVisits }, () => randomUUID());
    let rows = 0;
    await db.transaction(async (tx) => {
      for (const part of chunks(patientIds.map((id, i) => ({ id, i })), 1000)) {
        await tx.insert(patients).values(
          part.map(({ id, i }) => ({
            id,
            ownerId: userId,
            ...sealPatient(phi, id, {
              first_name: `Bench${i}`,
              last_name: `Patient${i}`,
              email: `bench.patient${i}@example.test`,
              phone: `614-555-${String(i % 10_000).padStart(4, '0')}`,
              address: `${100 + (i % 900)} Bench St, Columbus, OH 43215`,
            }),
          })),
        );
        await tx.insert(patientReferrals).values(
          part.map(({ id, i }) => ({
            id: referralIds[i] as string,
            patientId: id,
            ownerId: userId,
            discipline: 'PT',
            diagnosisCodes: ['M17.11', 'Z96.651'],
            referralSource: 'Bench General Hospital',
            startOfCare: addDays(firstDay, -7),
            orderedFrequency: '2w4',
          })),
        );
        rows += part.length * 2;
      }
      for (const part of chunks(visitIds.map((id, i) => ({ id, i })), 1000)) {
        await tx.insert(visits).values(
          part.map(({ id, i }) => {
            const p = i % Math.max(1, nPatients);
            return {
              id,
              ownerId: userId,
              patientId: patientIds[p] ?? null,
              referralId: referralIds[p] ?? null,
              visitDate: addDays(firstDay, i % days),
              startTime: `${String(7 + (Math.floor(i / days) % 12)).padStart(2, '0')}:${String((Math.floor(i / days / 12) * 5) % 60).padStart(2, '0')}`,
              addressEnc: phi.seal(`${100 + (p % 900)} Bench St, Columbus, OH 43215`, 'visits', 'address_enc', id),
              notesEnc: phi.seal(i % 3 === 0 ? 'Call caregiver 15 minutes before arrival; side door.' : null, 'visits', 'notes_enc', id),
            };
          }),
        );
        rows += part.length;
      }
      if (withEvents && eventsPerVisit > 0) {
        const types = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
        const events = visitIds.flatMap((visitId, i) =>
          types.slice(0, eventsPerVisit).map((eventType, k) => ({
            visitId,
            ownerId: userId,
            eventType,
            eventTime: new Date(Date.parse(`${addDays(firstDay, i % days)}T12:00:00Z`) + k * 20 * 60_000),
            latitude: 39.96 + (i % 100) / 10_000,
            longitude: -82.99 - (i % 100) / 10_000,
            accuracy: 8,
            createdAt: now,
          })),
        );
        for (const part of chunks(events, 2000)) {
          await tx.insert(timerEvents).values(part);
          rows += part.length;
        }
      }
    });
    // PostgreSQL's autovacuum would gather statistics after such a load. PGlite has none: the
    // embedded server analyzes at boot, hourly, and any table that grew by a fifth within ten
    // seconds (maintenance.analyzeGrown); that check runs now, as it would have before a device
    // came to drain its outbox. BENCH_PGLITE_ANALYZE=1: a whole ANALYZE; =0: no statistics.
    if (database.kind === 'postgres' || process.env.BENCH_PGLITE_ANALYZE === '1') await db.execute(sql`analyze`);
    else if (process.env.BENCH_PGLITE_ANALYZE !== '0') await services.maintenance.analyzeGrown();
    return { rows, ms: performance.now() - started, patientIds, visitIds };
  },

  async 'insert-rows'({ userId, via, mutations }) {
    const now = new Date();
    const events: Array<typeof timerEvents.$inferInsert> = [];
    const mileage = new Map<string, typeof visitMileage.$inferInsert>();
    const patientRows: Array<typeof patients.$inferInsert> = [];
    const referralRows: Array<typeof patientReferrals.$inferInsert> = [];
    // The entries a drain's sets write for the same mutations (the batch planners' own).
    const audits: Array<{ ctx: AuditContext; entry: AuditEntry }> = [];
    const audited = (k: number, entry: AuditEntry) => audits.push({ ctx: { actorUserId: userId, organizationId: null, requestId: `bench:${k}` }, entry });
    for (const [k, { name, args }] of mutations.entries()) {
      if (name === 'visit.timer_events') {
        const a = args as { schedule_uuid: string; events: Array<{ event_type: string; event_time: string; latitude: number; longitude: number; accuracy: number }> };
        for (const e of a.events) {
          events.push({ visitId: a.schedule_uuid, ownerId: userId, eventType: e.event_type, eventTime: new Date(e.event_time), latitude: e.latitude, longitude: e.longitude, accuracy: e.accuracy, createdAt: now });
        }
        audited(k, { action: 'update', resourceType: 'visit_timer', resourceId: a.schedule_uuid, details: { added: a.events.length, replayed: 0 } });
      } else if (name === 'visit.mileage') {
        const a = args as { uuid: string; mileage: { total_miles: number; travel_miles?: number; onsite_miles?: number; recorded_at?: string } };
        const m = a.mileage;
        mileage.set(a.uuid, {
          visitId: a.uuid,
          ownerId: userId,
          totalMiles: m.total_miles,
          travelMiles: m.travel_miles ?? null,
          onsiteMiles: m.onsite_miles ?? null,
          recordedAt: m.recorded_at ? new Date(m.recorded_at) : now,
          createdAt: now,
          updatedAt: now,
        });
        audited(k, { action: 'update', resourceType: 'visit_mileage', resourceId: a.uuid, details: { applied: true } });
      } else if (name === 'patient.create') {
        const a = args as { uuid: string; referral_uuid: string; first_name: string; last_name: string; phone?: string; address?: string; referral?: { discipline?: string; diagnosis_codes?: string[]; ordered_frequency?: string } };
        patientRows.push({
          id: a.uuid,
          ownerId: userId,
          ...sealPatient(phi, a.uuid, { first_name: a.first_name, last_name: a.last_name, email: null, phone: a.phone ?? null, address: a.address ?? null }),
          createdAt: now,
          updatedAt: now,
        });
        referralRows.push({
          id: a.referral_uuid,
          patientId: a.uuid,
          ownerId: userId,
          status: 'open',
          discipline: a.referral?.discipline ?? null,
          diagnosisCodes: a.referral?.diagnosis_codes ?? [],
          orderedFrequency: a.referral?.ordered_frequency ?? null,
          createdAt: now,
          updatedAt: now,
        });
        const { uuid: _, referral_uuid: __, ...body } = a;
        audited(k, { action: 'create', resourceType: 'patient', resourceId: a.uuid, details: { fields: createdFields(body as Parameters<typeof createdFields>[0]), referral_uuid: a.referral_uuid } });
      }
    }
    const started = performance.now();
    await db.transaction(async (tx) => {
      if (via !== 'values') {
        await tx.execute(insertRecordset(timerEvents, TIMER_EVENT_KEYS, events));
        await tx.execute(insertRecordset(visitMileage, MILEAGE_KEYS, [...mileage.values()]));
        await tx.execute(insertRecordset(patients, PATIENT_KEYS, patientRows));
        await tx.execute(insertRecordset(patientReferrals, REFERRAL_KEYS, referralRows));
        if (via === 'recordset+audit') await services.audit.recordSucceeded(tx, audits);
        return;
      }
      for (const part of chunks(events, 4000)) await tx.insert(timerEvents).values(part);
      for (const part of chunks([...mileage.values()], 4000)) await tx.insert(visitMileage).values(part);
      for (const part of chunks(patientRows, 4000)) await tx.insert(patients).values(part);
      for (const part of chunks(referralRows, 4000)) await tx.insert(patientReferrals).values(part);
    });
    const audit = via === 'recordset+audit' ? audits.length : 0;
    return { rows: events.length + mileage.size + patientRows.length + referralRows.length + audit, ms: performance.now() - started };
  },

  async 'select-scope'({ userId, open }) {
    const started = performance.now();
    const { time_zone: timeZone } = await services.clinicianSettings.get(userId);
    const window = windowOf(new Date(), timeZone);
    const inWindow = and(eq(visits.ownerId, userId), gte(visits.visitDate, window.from), lte(visits.visitDate, window.to), isNull(visits.deletedAt));
    // The same rows as a first sync (feed.ts), in one read transaction, without the protocol.
    const rows = await db.transaction(
      async (tx) => {
        const p = await tx.select().from(patients).where(and(eq(patients.ownerId, userId), isNull(patients.deletedAt)));
        const r = await tx.select().from(patientReferrals).where(and(eq(patientReferrals.ownerId, userId), isNull(patientReferrals.deletedAt)));
        const v = await tx.select().from(visits).where(inWindow);
        const e = await tx
          .select({ e: timerEvents })
          .from(timerEvents)
          .innerJoin(visits, eq(visits.id, timerEvents.visitId))
          .where(and(eq(timerEvents.ownerId, userId), inWindow, isNull(timerEvents.deletedAt)));
        const n = await tx
          .select({ n: soapNotes })
          .from(soapNotes)
          .innerJoin(visits, eq(visits.id, soapNotes.visitId))
          .where(and(eq(soapNotes.ownerId, userId), inWindow, isNull(soapNotes.deletedAt)));
        const m = await tx
          .select({ m: visitMileage })
          .from(visitMileage)
          .innerJoin(visits, eq(visits.id, visitMileage.visitId))
          .where(and(eq(visitMileage.ownerId, userId), inWindow, isNull(visitMileage.deletedAt)));
        if (open) {
          for (const row of p) openPatient(phi, row);
          for (const row of v) visitFieldsOf(phi, row);
          for (const row of n) soapRecordOf(phi, row.n);
        }
        return p.length + r.length + v.length + e.length + n.length + m.length;
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
    return { rows, ms: performance.now() - started };
  },

  async 'notify-rtt'({ count, warmup }) {
    const channel = 'fieldchart_bench_rtt';
    let waiting: ((payload: string) => void) | null = null;
    const onPayload = (payload: string) => waiting?.(payload);
    let unlisten: () => Promise<void>;
    if (database.sql) unlisten = (await database.sql.listen(channel, onPayload)).unlisten;
    else if (database.pglite) unlisten = await database.pglite.listen(channel, onPayload);
    else throw new Error('no database to listen on');
    const latenciesMs: number[] = [];
    try {
      for (let i = 0; i < warmup + count; i++) {
        const payload = String(i);
        const started = performance.now();
        const received = new Promise<void>((resolve) => {
          waiting = (p) => p === payload && resolve();
        });
        // The same path a data change takes: pg_notify inside a transaction, delivered on commit.
        await db.transaction(async (tx) => {
          await tx.execute(sql`select pg_notify(${channel}, ${payload})`);
        });
        await received;
        if (i >= warmup) latenciesMs.push(performance.now() - started);
      }
    } finally {
      waiting = null;
      await unlisten();
    }
    return { latenciesMs };
  },

  async 'write-to-device'({ userId, token, visitId, count, warmup }) {
    const syncUrl = `${server.url.replace(/^http/, 'ws')}${API}/sync`;
    const opened = (ws: WebSocket) => new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    type Frame = { type: string; changes?: Array<{ table: string; row?: { recorded_at?: string } }> };
    // Frames are queued: ws may deliver two in one tick, before a waiter is set again.
    const frames: Frame[] = [];
    let wake: (() => void) | null = null;
    const device = new WebSocket(syncUrl, { perMessageDeflate: false });
    device.on('message', (data: Buffer) => {
      frames.push(JSON.parse(data.toString('utf8')) as Frame);
      wake?.();
    });
    await opened(device);
    const until = async (accept: (m: Frame) => boolean): Promise<void> => {
      for (;;) {
        while (frames.length > 0) if (accept(frames.shift() as Frame)) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    };
    let synced = until((m) => m.type === 'synced');
    device.send(JSON.stringify({ type: 'hello', protocol: 2, token, client_id: randomUUID(), cursor: null }));
    await synced;
    synced = until((m) => m.type === 'synced');
    await db
      .insert(visitMileage)
      .values({ visitId, ownerId: userId, totalMiles: 1, recordedAt: new Date() })
      .onConflictDoNothing();
    await synced;

    // The floor's socket: a bare websocket server and client, both in this process.
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const serverSide = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
    const floorClient = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, { perMessageDeflate: false });
    await opened(floorClient);
    const floorSocket = await serverSide;
    let floorDone: (() => void) | null = null;
    floorClient.on('message', (data: Buffer) => {
      JSON.parse(data.toString('utf8'));
      floorDone?.();
    });
    const channel = 'fieldchart_bench_floor';
    const onNotice = async () => {
      const [row] = await db.select().from(visitMileage).where(eq(visitMileage.visitId, visitId));
      if (!row) throw new Error('no mileage row');
      const change = {
        table: 'visit_mileage',
        op: 'upsert',
        id: row.visitId,
        version: row.rowVersion,
        row: { schedule_uuid: row.visitId, total_miles: row.totalMiles, travel_miles: row.travelMiles, onsite_miles: row.onsiteMiles, recorded_at: row.recordedAt.toISOString() },
      };
      floorSocket.send(JSON.stringify({ type: 'changes', changes: [change], checkpoint: 'floor', more: false }));
    };
    const onPayload = () => void onNotice().catch((err: Error) => console.error(`floor: ${err.message}`));
    let unlisten: () => Promise<void>;
    if (database.sql) unlisten = (await database.sql.listen(channel, onPayload)).unlisten;
    else if (database.pglite) unlisten = await database.pglite.listen(channel, onPayload);
    else throw new Error('no database to listen on');

    const floorMs: number[] = [];
    const writeMs: number[] = [];
    const floorTxMs: number[] = [];
    const writeTxMs: number[] = [];
    const base = Date.now() - 7200_000;
    try {
      for (let i = 0; i < warmup + count; i++) {
        const floorReceived = new Promise<void>((resolve) => (floorDone = resolve));
        let started = performance.now();
        await db.transaction(async (tx) => {
          await tx.execute(sql`select pg_notify(${channel}, ${String(i)})`);
        });
        const floorTx = performance.now() - started;
        await floorReceived;
        const floor = performance.now() - started;

        const recordedAt = new Date(base + i * 1000);
        const stamp = recordedAt.toISOString();
        const delivered = until((m) => m.type === 'changes' && (m.changes ?? []).some((c) => c.table === 'visit_mileage' && c.row?.recorded_at === stamp));
        started = performance.now();
        await db.transaction(async (tx) => {
          await tx.update(visitMileage).set({ totalMiles: 10 + (i % 50), recordedAt }).where(eq(visitMileage.visitId, visitId));
        });
        const writeTx = performance.now() - started;
        await delivered;
        const write = performance.now() - started;
        // The run ends with synced: the next write finds the device current.
        await until((m) => m.type === 'synced');
        if (i >= warmup) {
          floorMs.push(floor);
          writeMs.push(write);
          floorTxMs.push(floorTx);
          writeTxMs.push(writeTx);
        }
      }
    } finally {
      await unlisten();
      floorClient.close();
      device.close();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
    return { floorMs, writeMs, floorTxMs, writeTxMs };
  },

  async cpu() {
    const { user, system } = process.cpuUsage();
    return { serverMs: (user + system) / 1000, databaseMs: await backendsCpuMs() };
  },

  async 'profile-start'() {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    return null;
  },

  async 'profile-stop'({ file }) {
    if (!session) throw new Error('no profile running');
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    session = null;
    fs.writeFileSync(file, JSON.stringify(profile));
    return { file };
  },
};

/** CPU of the PostgreSQL backends serving this database (pg_stat_activity's pids, /proc/<pid>/stat). */
async function backendsCpuMs(): Promise<number | null> {
  if (!database.sql || process.platform !== 'linux') return null;
  const pids = await database.sql<Array<{ pid: number }>>`select pid from pg_stat_activity where datname = current_database()`;
  const tick = 1000 / 100; // USER_HZ is 100 on Linux
  let ms = 0;
  for (const { pid } of pids) {
    try {
      // utime and stime are fields 14 and 15; the command name (field 2) may hold spaces.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += (Number(fields[11]) + Number(fields[12])) * tick;
    } catch {
      // A backend that ended between the query and the read.
    }
  }
  return ms;
}

process.on('message', (m: { rpc?: number; cmd?: keyof SyncRpc; args?: never }) => {
  if (typeof m !== 'object' || m === null || m.rpc === undefined || !m.cmd) return;
  const { rpc, cmd } = m;
  const handler = handlers[cmd] as (args: unknown) => Promise<unknown>;
  handler(m.args ?? {}).then(
    (result) => process.send?.({ rpc, ok: true, result }),
    (err: Error) => process.send?.({ rpc, ok: false, error: err.stack ?? err.message }),
  );
});

const ready: SyncServers = {
  backend,
  apiOrigin: server.url,
  apiPrefix: API,
  syncUrl: `${server.url.replace(/^http/, 'ws')}${API}/sync`,
  hocuspocus: hocuspocus ? { memory: hocuspocus.memoryUrl, database: hocuspocus.databaseUrl } : null,
};
process.send({ ready });
