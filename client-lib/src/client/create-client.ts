/**
 * The offline client: one object wiring storage (PGlite), sync (socket, outbox, feed, drafts)
 * and the app-facing calls. Reads come from the device database; writes are queued in the
 * outbox and shown at once.
 */
import type * as Y from 'yjs';
import type { SignInResult } from '../rest/index.ts';
import { addDays, localDate } from '@fieldchart/schema/rules';
import type { MutationArgs } from '@fieldchart/schema/sync';
import { PlatformWebSocket } from '#websocket';
import type { WebSocketConstructor } from '../platform/websocket.ts';
import { deviceKeyStoreFor, firstScreenStoreFor } from '#device-key';
import { openLocalDb, type LocalDb } from '../storage/local-db.ts';
import { openFirstScreen } from '../storage/first-screen.ts';
import { aesGcmCipher } from '../storage/row-cipher.ts';
import { tabNames, tabsSupported } from '../storage/shared-db.ts';
import { browserTabLink } from '../sync/tab-link.ts';
import { getMeta, type StoredSession } from '../storage/meta.ts';
import {
  dismissFailures,
  dismissRejections,
  listFailures,
  listRejections,
  overlayEntries,
  receiptRows,
  requeueFailures,
  type Failure,
  type Rejection,
} from '../storage/outbox.ts';
import { unconfirmedDrafts } from '../storage/draft-store.ts';
import { byVisitTime, readNotifications, readPatients, readVisits, type Patient, type Visit, type VisitSelection } from '../model/views.ts';
import type { BackoffOptions } from '../sync/backoff.ts';
import { draftName, scheduleUuidOfDraft, SOAP_SECTIONS } from '../sync/drafts.ts';
import { syncSignals } from '../sync/engine-parts.ts';
import { SyncEngine, type SyncEvents } from '../sync/sync-engine.ts';
import { deviceOwnerFor, unsyncedWork } from '../sync/device-data.ts';
import { describeStatus, type SyncStatus } from '../sync/status.ts';
import { LocalNotFoundError, NotSignedInError, OutboxNotEmptyError, PlanDayError } from './errors.ts';
import { planDayFrom } from '../model/plan-day.ts';
import { checkNote, checklistItems, noteText } from '../model/visit-checklist.ts';
import { checkArgs, checkTimerSequence, queueWrite } from './writes.ts';
import { createDictations } from './dictations.ts';
import type { FieldchartClient, FieldchartClientOptions, VisitReceipt } from './types.ts';
import { startMark } from '../platform/start-marks.ts';

const API_SYNC_PATH = '/api/therapist/v1/sync';

/** The sync endpoint's URL for an API origin: http → ws, https → wss. */
export function syncUrlOf(baseUrl: string): string {
  const u = new URL(baseUrl.replace(/\/+$/, '') + API_SYNC_PATH);
  u.protocol = u.protocol === 'https:' ? 'wss:' : u.protocol === 'http:' ? 'ws:' : u.protocol;
  return u.toString();
}

/**
 * The first screen the client kept for `dataDir` (`client.firstScreen.read`), opened with the
 * device key; null if none is kept or it no longer opens (the key was rotated: sign-out, another
 * user). Opens no database: an app calls it at the very start, beside
 * {@link createFieldchartClient}, to show its first screen before the database is open.
 */
export async function readFirstScreen<T>(dataDir: string): Promise<T | null> {
  const store = firstScreenStoreFor(dataDir);
  // Both reads at once: a start waits for them.
  const [key, sealed] = await Promise.all([deviceKeyStoreFor(dataDir).load(), store.get()]);
  return openFirstScreen<T>(sealed, key, aesGcmCipher, dataDir);
}

/** Today's date (YYYY-MM-DD) in `timeZone`, or the device's zone: the server's rule. */
export { localDate };

/**
 * Opens the device database at `dataDir`, restores the stored session and outbox, and starts
 * syncing if a session is stored. Resolves once the client is ready: reads work at once,
 * online or not.
 *
 * @example
 * ```ts
 * const client = await createFieldchartClient({ baseUrl: 'https://api.fieldchart.example', dataDir: 'idb://fieldchart' });
 * if (!client.sync.status.signedIn) await client.signIn({ email, password });
 * const today = await client.visits.today();
 * ```
 */
export async function createFieldchartClient(options: FieldchartClientOptions): Promise<FieldchartClient> {
  const WebSocketImpl = options.WebSocket ?? PlatformWebSocket;
  if (!WebSocketImpl) throw new TypeError('This platform has no WebSocket: pass one as the `WebSocket` option');
  if (options.databaseWorker && !tabsSupported()) throw new TypeError('`databaseWorker` needs navigator.locks, BroadcastChannel and Worker (a browser)');
  const signals = syncSignals();
  const db = await openLocalDb(options.dataDir, {
    // A full storage is state the app can show, whoever met it.
    onStorageError: (err) => signals.state.fail(err.code, err.message),
    ...(options.pglite ? { pglite: options.pglite } : {}),
    ...(options.storageOpenTimeoutMs !== undefined ? { openTimeoutMs: options.storageOpenTimeoutMs } : {}),
    ...(options.databaseWorker ? { worker: options.databaseWorker } : {}),
  });
  const engine = new SyncEngine({
    db,
    signals,
    baseUrl: options.baseUrl,
    url: options.syncUrl ?? syncUrlOf(options.baseUrl),
    WebSocket: WebSocketImpl,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.submitWaitMs !== undefined ? { submitWaitMs: options.submitWaitMs } : {}),
    ...(options.openTimeoutMs !== undefined ? { openTimeoutMs: options.openTimeoutMs } : {}),
    ...(options.network !== undefined ? { network: options.network } : {}),
    ...(options.databaseWorker ? { tabs: browserTabLink(tabNames(options.dataDir)) } : {}),
  });
  await engine.start();
  startMark('fieldchart:sync-started');
  return buildClient(db, engine, options);
}

function buildClient(db: LocalDb, engine: SyncEngine, options: FieldchartClientOptions): FieldchartClient {
  const rest = engine.rest;
  const draftTexts = (uuid: string) => engine.drafts.sections(uuid);
  const today = () => localDate(new Date(), options.timeZone);

  async function visitsOf(sel: VisitSelection, withNote = false): Promise<Visit[]> {
    return readVisits(db, await overlayEntries(db), sel, { withNote, draftTexts });
  }

  async function visitOrThrow(uuid: string): Promise<Visit> {
    const [v] = await visitsOf({ uuid });
    if (!v) throw new LocalNotFoundError('Visit not found on this device', 'visit_not_found');
    return v;
  }

  /** The discipline of the visit's referral, else of its patient's newest referral that names one. */
  async function referralDiscipline(visit: Visit): Promise<string | null> {
    if (!visit.patient_uuid) return null;
    const [patient] = await readPatients(db, await overlayEntries(db), visit.patient_uuid);
    const referrals = patient?.referrals ?? [];
    const own = referrals.find((r) => r.uuid === visit.referral_uuid)?.discipline;
    return own || ([...referrals].reverse().find((r) => r.discipline)?.discipline ?? null);
  }

  async function requireUser(): Promise<void> {
    if (engine.session.current || (await getMeta(db, 'user_id'))) return;
    throw new NotSignedInError();
  }

  async function write(name: Parameters<typeof queueWrite>[1], args: Record<string, unknown>, scheduleUuid: string | null, local?: Record<string, unknown>) {
    const id = await queueWrite(db, name, args, scheduleUuid, local);
    await engine.written();
    return id;
  }

  async function startSession(pair: { token: string; refresh_token: string; expires_in: number }, user: { uuid: string; email: string } | null): Promise<void> {
    if (user) {
      const owner = await deviceOwnerFor(db, user.uuid);
      // The device holds another clinician's data: never upload their writes as this user.
      if (owner.kind === 'other_unsynced') throw new OutboxNotEmptyError(owner.writes, owner.drafts);
      if (owner.kind === 'other') await engine.wipeUserData();
    }
    const session: StoredSession = {
      token: pair.token,
      refresh_token: pair.refresh_token,
      expires_at: Date.now() + pair.expires_in * 1000,
      user_id: user?.uuid ?? null,
      email: user?.email ?? null,
    };
    await engine.useSession(session);
  }

  const dictations = createDictations({
    db,
    engine,
    options,
    requireUser,
    disciplineOf: async (uuid) => referralDiscipline(await visitOrThrow(uuid)),
  });

  const on = <K extends keyof SyncEvents>(event: K, listener: (payload: SyncEvents[K]) => void) => engine.events.on(event, listener);

  return {
    rest,

    async signIn(body) {
      const result: SignInResult = await rest.signIn(body);
      await startSession(result, { uuid: result.loginData.uuid, email: result.loginData.email });
      return result;
    },

    async signInWithTokens(pair) {
      await startSession(pair, null);
    },

    async signOut(opts = {}) {
      const work = await unsyncedWork(db);
      if ((work.writes > 0 || work.drafts > 0) && !opts.force) throw new OutboxNotEmptyError(work.writes, work.drafts);
      const token = engine.session.current?.token;
      if (token) {
        // Best effort: offline, the session simply expires on the server.
        await rest.logout({ token }).catch(() => undefined);
      }
      await engine.endSession('signed_out');
      await engine.wipeUserData();
    },

    visits: {
      async today(opts = {}) {
        const date = opts.date ?? today();
        return (await visitsOf({ date })).filter((v) => v.status !== 'cancelled').sort(byVisitTime);
      },
      async upcoming(opts = {}) {
        const from = opts.after ?? today();
        const sel: VisitSelection = opts.days === undefined ? { after: from } : { after: from, until: addDays(from, opts.days) };
        return (await visitsOf(sel)).filter((v) => v.status === 'scheduled' || v.status === 'in_progress').sort(byVisitTime);
      },
      async get(uuid) {
        const [v] = await visitsOf({ uuid }, true);
        return v ?? null;
      },
      async schedule(body) {
        await requireUser();
        const uuid = body.uuid ?? globalThis.crypto.randomUUID();
        const args = checkArgs('visit.schedule', { ...body, uuid });
        await write('visit.schedule', args, uuid);
        return { uuid };
      },
      async recordTimerEvents(scheduleUuid, events) {
        await requireUser();
        const args = checkArgs('visit.timer_events', { schedule_uuid: scheduleUuid, events });
        checkTimerSequence(await visitOrThrow(scheduleUuid), events);
        const eventUuids = events.map(() => globalThis.crypto.randomUUID());
        return { mutationId: await write('visit.timer_events', args, scheduleUuid, { event_uuids: eventUuids }) };
      },
      async setMileage(scheduleUuid, mileage) {
        await requireUser();
        await visitOrThrow(scheduleUuid);
        // The device's time decides between competing entries (last writer wins): always send it.
        const args = checkArgs('visit.mileage', { uuid: scheduleUuid, mileage: { ...mileage, recorded_at: mileage.recorded_at ?? new Date().toISOString() } });
        return { mutationId: await write('visit.mileage', args, scheduleUuid) };
      },
      async receipt(scheduleUuid) {
        return (await receiptsOf([scheduleUuid]))[0] ?? { scheduleUuid, state: 'none', pendingMutations: 0, draftOnDeviceOnly: false, lastAcknowledgedAt: null };
      },
      receipts: () => receiptsOf(null),
      async planDay(date, opts = {}) {
        const day = (await visitsOf({ date })).filter((v) => v.status !== 'cancelled').sort(byVisitTime);
        // Every cached visit: the GPS fixes of earlier visits place today's patients.
        const history = await visitsOf({ after: '0000-00-00' });
        const out = planDayFrom(day, history, opts);
        if (!out.ok) throw new PlanDayError(out.message, out.reason);
        return out.plan;
      },
    },

    patients: {
      list: async () => readPatients(db, await overlayEntries(db), null),
      async get(uuid) {
        const [p] = await readPatients(db, await overlayEntries(db), uuid);
        return p ?? null;
      },
      async create(body) {
        await requireUser();
        const uuid = body.uuid ?? globalThis.crypto.randomUUID();
        const referralUuid = body.referral_uuid ?? globalThis.crypto.randomUUID();
        const args = checkArgs('patient.create', { ...body, uuid, referral_uuid: referralUuid });
        await write('patient.create', args, null);
        return { uuid, referral_uuid: referralUuid };
      },
      async update(uuid, body) {
        await requireUser();
        const [p] = await readPatients(db, await overlayEntries(db), uuid);
        if (!p) throw new LocalNotFoundError('Patient not found on this device', 'patient_not_found');
        const args = checkArgs('patient.update', { ...body, uuid });
        return { mutationId: await write('patient.update', args, null) };
      },
    },

    notifications: {
      list: (options) => readNotifications(db, options),
    },

    drafts: {
      open: (scheduleUuid) => engine.drafts.open(scheduleUuid),
      close: (scheduleUuid) => engine.drafts.close(scheduleUuid),
      sections: SOAP_SECTIONS,
      nameOf: draftName,
    },

    notes: {
      async submit(scheduleUuid, body = {}) {
        await requireUser();
        await visitOrThrow(scheduleUuid);
        // The outbox entry must not overtake the draft's last keystrokes on the device.
        await engine.drafts.flush();
        const args = checkArgs('note.submit', { schedule_uuid: scheduleUuid, ...body } as MutationArgs<'note.submit'>);
        return { mutationId: await write('note.submit', args, scheduleUuid) };
      },
    },

    checklists: {
      items: checklistItems,
      async forVisit(scheduleUuid, opts = {}) {
        const [visit] = await visitsOf({ uuid: scheduleUuid }, true);
        if (!visit) throw new LocalNotFoundError('Visit not found on this device', 'visit_not_found');
        const discipline = opts.discipline ?? (await referralDiscipline(visit));
        if (!discipline) throw new LocalNotFoundError('The visit has no referral discipline on this device: pass one', 'discipline_unknown');
        const draft = noteText((await engine.drafts.sections(scheduleUuid)) ?? {});
        const note = visit.soap_note ? noteText(visit.soap_note) : '';
        const result = draft !== '' ? checkNote(discipline, draft, 'draft') : checkNote(discipline, note, note !== '' ? 'note' : 'none');
        if (!result) throw new LocalNotFoundError(`No checklist for discipline ${discipline}`, 'checklist_not_found');
        return result;
      },
    },

    dictations: dictations.api,

    sync: {
      get status(): SyncStatus {
        return engine.status;
      },
      on: (event, listener) => engine.events.on(event, listener),
      async whenSynced(opts = {}) {
        const wait = engine.whenSynced();
        if (opts.timeoutMs === undefined) return wait;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<never>((_, reject) => {
          // Where the device stood says why it did not get there (flags, counts and an error
          // code: nothing of a patient's).
          timer = setTimeout(() => reject(new Error(`not synced within ${opts.timeoutMs} ms: ${describeStatus(engine.status)}`)), opts.timeoutMs);
        });
        try {
          await Promise.race([wait, timeout]);
        } finally {
          clearTimeout(timer);
        }
      },
      reconnect: () => engine.dropConnection(),
    },

    firstScreen: {
      read: (reader) => db.firstScreen.read(reader),
    },

    rejections: {
      list: () => listRejections(db),
      dismiss: (ids) => dismissRejections(db, ids),
      on: (listener: (r: Rejection) => void) => engine.events.on('rejection', listener),
    },

    failures: {
      list: () => listFailures(db),
      async retry(ids) {
        const queued = await requeueFailures(db, ids);
        await engine.written();
        return queued;
      },
      async dismiss(ids) {
        await dismissFailures(db, ids);
        await engine.written();
      },
      on: (listener: (f: Failure) => void) => engine.events.on('failure', listener),
    },

    on,

    async close() {
      await dictations.uploader.close();
      await engine.close();
      await db.close();
    },
  };

  async function receiptsOf(ids: readonly string[] | null): Promise<VisitReceipt[]> {
    const rows = await receiptRows(db, ids);
    const unconfirmed = new Set((await unconfirmedDrafts(db)).map(scheduleUuidOfDraft));
    const all = new Map(rows.map((r) => [r.schedule_uuid, r]));
    for (const uuid of unconfirmed) if ((ids === null || ids.includes(uuid)) && !all.has(uuid)) all.set(uuid, { schedule_uuid: uuid, pending: 0, acked_at: null });
    return [...all.values()].map((r) => {
      const draftOnDeviceOnly = unconfirmed.has(r.schedule_uuid);
      return {
        scheduleUuid: r.schedule_uuid,
        state: r.pending > 0 || draftOnDeviceOnly ? 'on_device' : r.acked_at ? 'acknowledged' : 'none',
        pendingMutations: r.pending,
        draftOnDeviceOnly,
        lastAcknowledgedAt: r.acked_at,
      };
    });
  }
}
