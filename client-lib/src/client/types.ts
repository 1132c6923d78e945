/** The offline client's public surface (see create-client.ts for the behaviour). */
import type * as Y from 'yjs';
import type { MutationArgs } from '@fieldchart/schema/sync';
import type { AiStatus, FetchLike, RestClient, SignInBody, SignInResult } from '../rest/index.ts';
import type { WebSocketConstructor } from '../platform/websocket.ts';
import type { NetworkStatus } from '../platform/network-status.ts';
import type { PgliteAssets } from '../storage/local-db.ts';
import type { runDatabaseWorker } from '../storage/shared-db.ts';
import type { DeviceNotification, Patient, Visit } from '../model/views.ts';
import type { DayPlan, PlanDayOptions } from '../model/plan-day.ts';
import type { ChecklistItemView, VisitChecklist } from '../model/visit-checklist.ts';
import type { Failure, Rejection } from '../storage/outbox.ts';
import type { BackoffOptions } from '../sync/backoff.ts';
import type { SoapSection } from '../sync/drafts.ts';
import type { SyncEvents } from '../sync/events.ts';
import type { SyncStatus } from '../sync/status.ts';

/** Options of {@link createFieldchartClient}. */
export interface FieldchartClientOptions {
  /** The API's origin, e.g. `https://api.fieldchart.example` (the sync socket is derived: wss://…/api/therapist/v1/sync). */
  readonly baseUrl: string;
  /**
   * Where the device database lives: `memory://` (nothing kept; tests), a directory path
   * (Node), or `idb://<name>` (IndexedDB, browsers). Its PHI is encrypted under a device key
   * kept in `<dir>/fieldchart-device.key` (Node, 0600) or in IndexedDB (browsers); a database
   * whose key is gone does not open (`StorageError` `storage_key_lost`).
   */
  readonly dataDir: string;
  /**
   * PGlite's own options, for an app that serves PGlite's assets itself (the compiled
   * `pgliteWasmModule` and `initdbWasmModule`, the `fsBundle` blob of `pglite.data`) instead of
   * letting PGlite fetch them beside its code, or that brings its own file system (`fs`).
   */
  readonly pglite?: PgliteAssets;
  /**
   * How long opening the device database may take before `createFieldchartClient` rejects with
   * a {@link StorageError} `storage_blocked` (an IndexedDB another tab holds open at an older
   * version never opens). Default 60 000 ms; the first open also creates the database.
   */
  readonly storageOpenTimeoutMs?: number;
  /**
   * Browsers: lets every tab of the app open the same `dataDir` safely and share one sync
   * connection. Makes the app's database worker, whose file calls {@link runDatabaseWorker}:
   * `() => new Worker(new URL('./db-worker.js', import.meta.url), { type: 'module' })`. The
   * database lives in one tab's worker and the others query it there; the tab holding the
   * app's lock (`navigator.locks`) syncs for all, and the next tab takes over when it closes.
   * Without it (and in Node) a client owns `dataDir` alone: never open one twice.
   */
  readonly databaseWorker?: () => Worker;
  /** A WebSocket implementation; defaults to the platform's (`ws` in Node, the global elsewhere). */
  readonly WebSocket?: WebSocketConstructor;
  /** Overrides the sync socket URL derived from `baseUrl`. */
  readonly syncUrl?: string;
  /** Defaults to the global `fetch`. */
  readonly fetch?: FetchLike;
  /** IANA zone deciding "today" for `visits.today()`; defaults to the device's. */
  readonly timeZone?: string;
  /** Reconnect and retry delays (exponential, with jitter). Default 500 ms doubling to 30 s. */
  readonly backoff?: BackoffOptions;
  /**
   * How long a `note.submit` waits for the server to confirm it holds the draft before it
   * carries the device's section texts itself. Default 15 000 ms.
   */
  readonly submitWaitMs?: number;
  /**
   * How long a sync socket may take from connecting to the server's `welcome` before it is
   * dropped and tried again. Each handshake in a row that runs out gets twice as long (up to
   * 2 min), so a server slowed by load is still reached. Default 10 000 ms.
   */
  readonly openTimeoutMs?: number;
  /**
   * The device's network. When it goes, the sync socket is dropped at once (status
   * `connected: false`, `lastError.code` `offline`) rather than left open and dead; when it
   * comes back, the client reconnects at once. Default: the browser's `online`/`offline`
   * events; none in Node. Pass your own (e.g. from React Native's NetInfo), or null for none.
   */
  readonly network?: NetworkStatus | null;
}

/** Where a visit's local changes stand. */
export interface VisitReceipt {
  readonly scheduleUuid: string;
  /**
   * `on_device`: some changes exist only on this device (queued writes or draft edits);
   * `acknowledged`: the server has acknowledged every write made here; `none`: nothing was
   * written about this visit on this device.
   */
  readonly state: 'on_device' | 'acknowledged' | 'none';
  /** Queued writes not yet acknowledged. */
  readonly pendingMutations: number;
  /** The draft has edits the server is not known to have. */
  readonly draftOnDeviceOnly: boolean;
  /** Device time of the last acknowledgement of a write about this visit. */
  readonly lastAcknowledgedAt: string | null;
}

export type ScheduleVisitBody = MutationArgs<'visit.schedule'>;
export type TimerEventInput = MutationArgs<'visit.timer_events'>['events'][number];
export type MileageInput = Omit<MutationArgs<'visit.mileage'>['mileage'], 'recorded_at'> & { readonly recorded_at?: string };
export type CreatePatientBody = MutationArgs<'patient.create'>;
export type UpdatePatientBody = Omit<MutationArgs<'patient.update'>, 'uuid'>;
export type SubmitNoteBody = Pick<MutationArgs<'note.submit'>, 'vital_signs' | 'signature'>;

/** A queued write: its place in the outbox. */
export interface QueuedWrite {
  readonly mutationId: number;
}

/**
 * A dictation recorded on this device and where it stands:
 * - `on_device`: the audio is only here (offline, or waiting for a retry: see `lastError`);
 * - `uploading`: its bytes are going to the server now (`sentBytes` of `bytes`);
 * - `uploaded`: the server holds every byte; the AI run is not yet acknowledged (it waits for
 *   the connection, or for the visit's own queued writes to be acknowledged first);
 * - `on_server`: the server acknowledged the run (`transcriptionUuid`); the audio has left
 *   the device;
 * - `rejected`: the server refused it (`lastError`); the audio is kept until `retry` or `discard`.
 */
export interface Dictation {
  readonly id: string;
  readonly scheduleUuid: string;
  readonly discipline: string;
  readonly encounterType: string;
  readonly state: 'on_device' | 'uploading' | 'uploaded' | 'on_server' | 'rejected';
  /** The recording's size. */
  readonly bytes: number;
  /** Bytes that have left the device (while uploading) or that the server confirmed. */
  readonly sentBytes: number;
  /** The AI run on the server (`GET /ai/status/{uuid}`), once acknowledged. */
  readonly transcriptionUuid: string | null;
  /** The run's status as the sync feed brought it (`ai_status`), readable offline: the note suggestion once `completed`. */
  readonly suggestion: AiStatus | null;
  /** The last failure (kept while it is tried again), or the refusal of a `rejected` one. */
  readonly lastError: { readonly code: string; readonly message: string } | null;
  /** Device time of the recording. */
  readonly recordedAt: string;
}

/** Options of {@link FieldchartClient.dictations}`.add`. */
export interface AddDictationOptions {
  /** The pipeline's discipline (PT, PTA, OT, COTA, SLP, RN); default: the visit's referral's. */
  readonly discipline?: string;
  /** Default `daily_note`. */
  readonly encounterType?: 'daily_note' | 'evaluation' | 'reassessment' | 'progress_note' | 'discharge' | 'supervisory';
}

/** The Fieldchart offline client. Every read is local; every write is queued and shown at once. */
export interface FieldchartClient {
  /** The typed REST client, authenticated with the stored session (refreshed on 401). */
  readonly rest: RestClient;
  /** Signs in (REST), stores the tokens on the device and starts syncing. Throws the REST errors; {@link OutboxNotEmptyError} if another user's unsynced work is on the device. */
  signIn(body: SignInBody): Promise<SignInResult>;
  /** Starts a session from a token pair obtained elsewhere (e.g. registration). */
  signInWithTokens(pair: { token: string; refresh_token: string; expires_in: number }): Promise<void>;
  /**
   * Ends the session and clears the device's data, then destroys the device key and makes a
   * new one (what the cleared rows left in the files can no longer be read). Throws
   * {@link OutboxNotEmptyError} while writes or draft edits exist only on this device, unless
   * `force` (which discards them).
   */
  signOut(options?: { force?: boolean }): Promise<void>;

  readonly visits: {
    /** Today's visits (not cancelled), by start time. `date` overrides "today". */
    today(options?: { date?: string }): Promise<Visit[]>;
    /** Scheduled and in-progress visits after today (within `days` if given), by date and time. */
    upcoming(options?: { after?: string; days?: number }): Promise<Visit[]>;
    /** One visit with its note (once completed), or null if this device does not have it. */
    get(scheduleUuid: string): Promise<Visit | null>;
    /** Schedules a visit (mutation `visit.schedule`); the id is generated here. */
    schedule(body: Omit<ScheduleVisitBody, 'uuid'> & { uuid?: string }): Promise<{ uuid: string }>;
    /** Records timer events (`visit.timer_events`); the sequence is checked here first ({@link InvalidWriteError}). */
    recordTimerEvents(scheduleUuid: string, events: TimerEventInput[]): Promise<QueuedWrite>;
    /** Sets the mileage (`visit.mileage`), stamped with the device time (last writer wins). */
    setMileage(scheduleUuid: string, mileage: MileageInput): Promise<QueuedWrite>;
    /** Whether the visit's local changes are still only on this device. */
    receipt(scheduleUuid: string): Promise<VisitReceipt>;
    /** Receipts of every visit written about on this device. */
    receipts(): Promise<VisitReceipt[]>;
    /**
     * Re-plans `date` on the device, offline: the exact best order of that day's cached visits
     * (the server's solver and rules), great-circle travel times, locations learned from cached
     * `arrive` GPS fixes or given in `options.locations`. Changes nothing; throws
     * {@link PlanDayError} where the server would answer 422. See docs/routing.md.
     */
    planDay(date: string, options?: PlanDayOptions): Promise<DayPlan>;
  };

  readonly patients: {
    list(): Promise<Patient[]>;
    get(uuid: string): Promise<Patient | null>;
    /** Creates a patient with an open referral (`patient.create`); both ids generated here. */
    create(body: Omit<CreatePatientBody, 'uuid' | 'referral_uuid'> & { uuid?: string; referral_uuid?: string }): Promise<{ uuid: string; referral_uuid: string }>;
    update(uuid: string, body: UpdatePatientBody): Promise<QueuedWrite>;
  };

  /**
   * The notification history as synced to the device (the feed's `notifications` table):
   * readable offline. Mark them read with `rest.notifications.markRead` (online); the new
   * state comes back through the feed.
   */
  readonly notifications: {
    /** Newest first; `unreadOnly` keeps those not yet read. */
    list(options?: { unreadOnly?: boolean }): Promise<DeviceNotification[]>;
  };

  readonly drafts: {
    /**
     * The visit's SOAP draft: a Y.Doc with a `Y.Text` per section (`doc.getText('plan')`),
     * kept on the device and synced while online. The same Y.Doc until `close`.
     */
    open(scheduleUuid: string): Promise<Y.Doc>;
    /** The app left the note screen; do not use the Y.Doc afterwards. Unsynced edits still upload. */
    close(scheduleUuid: string): Promise<void>;
    readonly sections: readonly SoapSection[];
    /** The draft's document name on the server (`visit/<uuid>/soap`). */
    nameOf(scheduleUuid: string): string;
  };

  readonly notes: {
    /**
     * Submits the visit's note (`note.submit`) without section texts: the server takes them
     * from its copy of the draft, which is synced before the submission is sent.
     */
    submit(scheduleUuid: string, body?: SubmitNoteBody): Promise<QueuedWrite>;
  };

  /**
   * Documentation checklists, offline: the server's checklists and matcher, run on the device
   * (the same answers as `POST /ai/match-checklist` for the same text).
   */
  readonly checklists: {
    /** A discipline's checklist items (`GET /ai/checklist/{discipline}`); null for a discipline with none. */
    items(discipline: string): ChecklistItemView[] | null;
    /**
     * The visit's note against its checklist: the device's draft when it has text, else the
     * submitted note, else nothing (every item missing). The discipline is the visit's
     * referral's unless given. Rejects with {@link LocalNotFoundError} `visit_not_found`,
     * `discipline_unknown` (no referral discipline on the device) or `checklist_not_found`.
     */
    forVisit(scheduleUuid: string, options?: { discipline?: string }): Promise<VisitChecklist>;
  };

  /**
   * Dictations for the AI note, recorded offline or not: the audio is kept on the device sealed
   * under the device key (in 256 KiB chunks), survives restarts, is uploaded resumably (tus)
   * when the server is reachable, then handed to `POST /ai/process-audio`; only once the server
   * acknowledged the run does it leave the device. The generated note comes back through the
   * sync feed (`suggestion`). A refused one (4xx) is `rejected` and reported in
   * `sync.status.lastError` (`dictation_rejected`). Sign-out counts unsent ones as unsynced work.
   */
  readonly dictations: {
    /** Keeps a recording (m4a, wav or mp3 bytes) for the visit and queues it. Resolves once it is stored on the device. */
    add(scheduleUuid: string, audio: Uint8Array | Blob, options?: AddDictationOptions): Promise<Dictation>;
    /** The device's dictations (of one visit if given), oldest first. */
    list(scheduleUuid?: string): Promise<Dictation[]>;
    get(id: string): Promise<Dictation | null>;
    /** Queues rejected dictations again (all if no ids); answers how many. */
    retry(ids?: readonly string[]): Promise<number>;
    /** Drops rejected dictations and their audio (all if no ids). */
    discard(ids?: readonly string[]): Promise<void>;
    /** Hears every change of a dictation (stored, progress, state). */
    on(listener: (change: { readonly id: string }) => void): () => void;
  };

  /**
   * The app's first screen, kept sealed with the device key beside the database so that the next
   * start can show it before the database opens ({@link readFirstScreen}). `read(reader)` runs
   * `reader` against this client and answers its result; the result is kept if no local write
   * overlapped the read, and `reader` runs again whenever later writes settle. Every write to
   * the device database deletes the kept screen before it starts, so what is kept is always
   * what the database would answer. A reader answers null when there is nothing to show
   * (signed out). Nothing is kept with `databaseWorker` (another tab's writes are not seen).
   */
  readonly firstScreen: {
    read<T>(reader: () => Promise<T | null>): Promise<T | null>;
  };

  readonly sync: {
    /** The current snapshot (a new object on every change). */
    readonly status: SyncStatus;
    /** Subscribes to `status`, `change`, `ack` or `rejection`; answers the unsubscribe function. */
    on<K extends keyof SyncEvents>(event: K, listener: (payload: SyncEvents[K]) => void): () => void;
    /**
     * Resolves when every write has been acknowledged and the last `synced` came after all
     * the server sent (the device is current). Against a server that speaks sync protocol 2,
     * also the feed has brought the server's rows of every acknowledged write: a local read
     * then equals the server's row (no optimistic copy is left). Waits through being offline;
     * rejects when the client stops (sign-out, close) or after `timeoutMs`.
     */
    whenSynced(options?: { timeoutMs?: number }): Promise<void>;
    /** Drops the socket and reconnects (with backoff). */
    reconnect(): void;
  };

  /** Writes the server refused: rolled back here, kept until dismissed so the app can show them. */
  readonly rejections: {
    list(): Promise<Rejection[]>;
    dismiss(mutationIds?: readonly number[]): Promise<void>;
    on(listener: (rejection: Rejection) => void): () => void;
  };

  /**
   * Writes the server parked after repeated unexpected errors on its side (`failed`): out of
   * the queue (the writes after them went on), not applied, kept here with their arguments.
   * `retry` queues them again at the end of the outbox (new mutation ids); `dismiss` drops them.
   */
  readonly failures: {
    list(): Promise<Failure[]>;
    retry(mutationIds?: readonly number[]): Promise<number[]>;
    dismiss(mutationIds?: readonly number[]): Promise<void>;
    on(listener: (failure: Failure) => void): () => void;
  };

  /** Same as `sync.on`. */
  on<K extends keyof SyncEvents>(event: K, listener: (payload: SyncEvents[K]) => void): () => void;

  /** Stops syncing and closes the device database (the outbox stays for the next start). */
  close(): Promise<void>;
}
