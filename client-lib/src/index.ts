/**
 * @fieldchart/client — the Fieldchart client library: the typed REST client
 * ({@link createRestClient}) and the offline client ({@link createFieldchartClient}), which
 * keeps the clinician's working set in a device database (PGlite), queues every write in an
 * outbox, and syncs both over one websocket (docs/sync-protocol.md).
 * Browser-safe: nothing here imports server code; Node-only pieces (`ws`) are chosen by the
 * package's `#websocket` import condition.
 *
 * @packageDocumentation
 */
export * from './rest/index.ts';
export { createFieldchartClient, localDate, readFirstScreen, syncUrlOf } from './client/create-client.ts';
export type {
  AddDictationOptions,
  CreatePatientBody,
  Dictation,
  FieldchartClient,
  FieldchartClientOptions,
  MileageInput,
  QueuedWrite,
  ScheduleVisitBody,
  SubmitNoteBody,
  TimerEventInput,
  UpdatePatientBody,
  VisitReceipt,
} from './client/types.ts';
export { InvalidWriteError, LocalNotFoundError, NotSignedInError, OutboxNotEmptyError, PlanDayError } from './client/errors.ts';
export type { DayPlan, PlanDayOptions } from './model/plan-day.ts';
export type { ChecklistItemView, VisitChecklist } from './model/visit-checklist.ts';
export type { DeviceNotification, Patient, Visit } from './model/views.ts';
export type { Failure, Rejection } from './storage/outbox.ts';
export { StorageError, type StorageErrorCode } from './storage/storage-errors.ts';
export type { PgliteAssets, PgliteFilesystem } from './storage/local-db.ts';
export { runDatabaseWorker } from './storage/shared-db.ts';
export { makeEmptyDeviceImage } from './storage/pglite-options.ts';
export type { SyncError, SyncStatus } from './sync/status.ts';
export type { SyncEvents } from './sync/events.ts';
export type { BackoffOptions } from './sync/backoff.ts';
export type { SoapSection } from './sync/drafts.ts';
export type { WebSocketConstructor, WebSocketLike } from './platform/websocket.ts';
export type { NetworkStatus } from './platform/network-status.ts';
/** The client marks its start (`fieldchart:db-open` … `sync-started`); an app marks its own the same way, once per page. */
export { startMark } from './platform/start-marks.ts';
