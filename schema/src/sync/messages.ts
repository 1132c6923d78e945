import * as z from 'zod';

/** The messages of the sync channel (docs/sync-protocol.md). JSON text frames, one per frame. */

/** The version this package's client speaks (docs/sync-protocol.md, Versioning). */
export const PROTOCOL_VERSION = 5;
/**
 * Every version a server speaks: apps in the field still say 1. Version 2 adds
 * `synced.acked_through` and the `conflict` answer to a mutation (a cloned install); version 3
 * adds `welcome.max_in_flight`, a larger window of unanswered mutations; version 4 sends a
 * batch's answers together, in `answers` frames; version 5 lets the device send its mutations
 * together, in `mutations` frames.
 */
export const SUPPORTED_PROTOCOLS: readonly number[] = [1, 2, 3, 4, 5];

export const SYNC_TABLES = [
  'patients',
  'patient_referrals',
  'visits',
  'timer_events',
  'soap_notes',
  'visit_mileage',
  'notifications',
  'organization_config',
  'checklists',
  'ai_status',
] as const;

export const MUTATION_NAMES = [
  'patient.create',
  'patient.update',
  'visit.schedule',
  'visit.timer_events',
  'visit.mileage',
  'note.submit',
] as const;

const uuid = z.uuid();
const instant = z.iso.datetime({ offset: true });
const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const mutationId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
/** A y-protocols sync message, base64 (standard alphabet). */
const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);
export const docName = z.string().regex(/^visit\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/soap$/);

// Device → server.

export const helloMessage = z
  .object({
    type: z.literal('hello'),
    protocol: z.number().int().positive(),
    token: z.string().min(1),
    client_id: uuid,
    cursor: z.string().min(1).nullable(),
  })
  .strict();

export const authMessage = z.object({ type: z.literal('auth'), token: z.string().min(1) }).strict();

export const mutationMessage = z
  .object({
    type: z.literal('mutation'),
    mutation_id: mutationId,
    name: z.enum(MUTATION_NAMES),
    args: z.record(z.string(), z.unknown()),
    client_time: instant,
  })
  .strict();

/**
 * What the server accepts as a mutation frame before judging the mutation itself: a type and
 * a valid id are enough to answer it. An unknown name (a newer app), invalid or oversized
 * arguments, a bad `client_time` are that mutation's `reject`, never the socket's or the
 * batch's failure (docs/sync-protocol.md, One mutation's failure is its own).
 */
export const incomingMutation = z
  .object({ type: z.literal('mutation'), mutation_id: mutationId, name: z.unknown().optional(), args: z.unknown().optional(), client_time: z.unknown().optional() })
  .loose();
export type IncomingMutation = z.infer<typeof incomingMutation>;

/** The largest mutation (its JSON) the server applies: a signature image (2 MB of base64) fits. */
export const MAX_MUTATION_BYTES = 3 * 1024 * 1024;

/** The protocol from which a device may send `mutations` frames. */
export const MUTATIONS_FRAMES_FROM = 5;
/** Protocol 5: the most mutations one `mutations` frame may carry (the frame's 4 MiB bounds it too). */
export const MAX_MUTATIONS_PER_FRAME = 1000;

/**
 * Protocol 5: mutations sent together, in order, each exactly as it would travel alone. A
 * device draining its outbox sends a frame per refill of its window instead of one per
 * mutation (docs/sync-protocol.md, Versioning); each is still answered on its own.
 */
export const mutationsMessage = z
  .object({ type: z.literal('mutations'), mutations: z.array(mutationMessage).min(1).max(MAX_MUTATIONS_PER_FRAME) })
  .strict();

/**
 * A `mutations` frame as the server takes it: each item as `incomingMutation` (answered on its
 * own whatever else is wrong with it), the frame refused only when an item has no valid id.
 */
export const incomingMutations = z
  .object({ type: z.literal('mutations'), mutations: z.array(incomingMutation).min(1).max(MAX_MUTATIONS_PER_FRAME) })
  .loose();

export const docOpenMessage = z.object({ type: z.literal('doc_open'), doc: docName }).strict();
export const docCloseMessage = z.object({ type: z.literal('doc_close'), doc: docName }).strict();
export const docMessage = z.object({ type: z.literal('doc'), doc: docName, message: base64 }).strict();

export const clientMessage = z.discriminatedUnion('type', [
  helloMessage,
  authMessage,
  mutationMessage,
  mutationsMessage,
  docOpenMessage,
  docCloseMessage,
  docMessage,
]);
export type ClientMessage = z.infer<typeof clientMessage>;

// Server → device.

export const welcomeMessage = z
  .object({
    type: z.literal('welcome'),
    protocol: z.number().int().positive(),
    user_id: uuid,
    server_time: instant,
    last_mutation_id: z.number().int().min(0),
    token_expires_at: instant,
    window: z.object({ from: date, to: date }).strict(),
    /** Protocol 3: mutations the device may keep unanswered on this socket (100 before). */
    max_in_flight: z.number().int().positive().optional(),
  })
  .strict();

export const authOkMessage = z.object({ type: z.literal('auth_ok'), token_expires_at: instant }).strict();

const changeBase = { table: z.enum(SYNC_TABLES), id: z.string().min(1), version: z.number().int().nonnegative() };
export const change = z.discriminatedUnion('op', [
  z.object({ ...changeBase, op: z.literal('upsert'), row: z.record(z.string(), z.unknown()) }).strict(),
  z.object({ ...changeBase, op: z.literal('delete') }).strict(),
]);
export type Change = z.infer<typeof change>;

export const changesMessage = z
  .object({
    type: z.literal('changes'),
    changes: z.array(change).max(500),
    checkpoint: z.string().min(1).nullable(),
    more: z.boolean(),
  })
  .strict();

export const resetMessage = z
  .object({ type: z.literal('reset'), reason: z.enum(['first_sync', 'scope_changed', 'cursor_unknown']) })
  .strict();

export const syncedMessage = z
  .object({
    type: z.literal('synced'),
    cursor: z.string().min(1),
    server_time: instant,
    /**
     * Protocol 2: the device's last processed mutation id as of this feed run's snapshot. Every
     * mutation up to it is reflected in what the device has now received, so its optimistic
     * copies of them can go. Absent on protocol 1 sockets.
     */
    acked_through: z.number().int().min(0).optional(),
  })
  .strict();

export const ackMessage = z.object({ type: z.literal('ack'), mutation_id: mutationId, result: z.unknown().optional() }).strict();

export const rejectMessage = z
  .object({
    type: z.literal('reject'),
    mutation_id: mutationId,
    status: z.number().int().min(400).max(499),
    code: z.string().min(1),
    message: z.string(),
    errors: z.record(z.string(), z.array(z.string())).optional(),
  })
  .strict();

export const retryMessage = z.object({ type: z.literal('retry'), mutation_id: mutationId, after_ms: z.number().int().min(0) }).strict();

/**
 * A mutation parked after it failed on unexpected server errors a few times in a row: counted
 * as processed (the queue behind it moves on), kept by the server and answered `failed` again
 * on a replay; the device keeps it and shows it, never drops it silently.
 */
export const failedMessage = z
  .object({
    type: z.literal('failed'),
    mutation_id: mutationId,
    code: z.string().min(1),
    message: z.string(),
    attempts: z.number().int().min(1),
  })
  .strict();

/**
 * Protocol 2: this mutation id of this client id was already processed with different content —
 * another install uses the same client id (a restored backup, a cloned phone). Not applied, not
 * counted; the device takes a new client id and sends it again under that (docs/sync-protocol.md,
 * Cloned installs).
 */
export const conflictMessage = z
  .object({
    type: z.literal('conflict'),
    mutation_id: mutationId,
    code: z.literal('client_id_reused'),
    message: z.string(),
  })
  .strict();

/**
 * Protocol 4: answers to mutations, in order, several to a frame (each as it would travel
 * alone on protocols 1–3). A draining device gets hundreds at a time: one frame to read and
 * parse instead of one each.
 */
export const answersMessage = z
  .object({
    type: z.literal('answers'),
    answers: z.array(z.discriminatedUnion('type', [ackMessage, rejectMessage, retryMessage, failedMessage, conflictMessage])).min(1),
  })
  .strict();

export const docErrorMessage = z
  .object({
    type: z.literal('doc_error'),
    doc: z.string(),
    code: z.enum(['not_found', 'invalid_update', 'too_large']),
    message: z.string(),
  })
  .strict();

export const serverMessage = z.discriminatedUnion('type', [
  welcomeMessage,
  authOkMessage,
  changesMessage,
  resetMessage,
  syncedMessage,
  ackMessage,
  rejectMessage,
  retryMessage,
  failedMessage,
  conflictMessage,
  answersMessage,
  docMessage,
  docErrorMessage,
]);
export type ServerMessage = z.infer<typeof serverMessage>;

// The REST fallback of mutations (`POST /sync/mutations`): the same mutations and answers, for
// a device whose network lets HTTP through but not websockets.

export const restMutationsBody = z
  .object({
    client_id: uuid,
    /** The sync protocol version the device speaks (absent: 1); 2 may be answered `conflict`. */
    protocol: z.number().int().positive().optional(),
    // Each mutation is judged on its own (a reject in `results`); only an entry without a
    // valid id cannot be answered, and fails the request.
    mutations: z.array(incomingMutation.omit({ type: true })).min(1).max(100),
  })
  .strict()
  .meta({ id: 'SyncMutationsRequest' });

export const restMutationsResult = z
  .object({
    /** The device's last processed mutation id after this request. */
    last_mutation_id: z.number().int().min(0),
    results: z.array(z.discriminatedUnion('type', [ackMessage, rejectMessage, retryMessage, failedMessage, conflictMessage])),
  })
  .meta({ id: 'SyncMutationsResult' });
