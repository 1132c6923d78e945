/** Visits: scheduling, the day's list and history, timer events, the SOAP note, mileage; push tokens. */
import type * as z from 'zod';
import type {
  evvRecord,
  fcmTokenBody,
  mileage,
  mileageBody,
  soapNote,
  soapNoteBody,
  timerEvent,
  timerEventsBody,
  upcomingVisitsQuery,
  visit,
  visitHistoryQuery,
  visitRequestBody,
} from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, Page, ReadOptions } from '../options.ts';

/** A visit as the API answers it, with timer events, EVV record, mileage and (details only) SOAP note (`Visit` in the OpenAPI document). */
export type VisitRecord = z.output<typeof visit>;
/** A recorded timer event. */
export type TimerEvent = z.output<typeof timerEvent>;
/** Electronic visit verification, derived from the timer events. */
export type EvvRecord = z.output<typeof evvRecord>;
/** A visit's recorded mileage. */
export type Mileage = z.output<typeof mileage>;
/** A submitted SOAP note. */
export type SoapNote = z.output<typeof soapNote>;
/** `data` of `GET /get-upcomming-visits` (member names as the API spells them). */
export interface UpcomingVisits {
  /** The day taken as today (YYYY-MM-DD, clinician's time zone, or `filter_date`). */
  readonly today: string;
  readonly today_visit: VisitRecord[];
  readonly upcomming_visit: VisitRecord[];
}
/** `data` of `POST /schedule-visit-request-save`: the new visit's schedule uuid. */
export interface ScheduledVisitRef {
  readonly uuid: string;
}
/** Body of `POST /schedule-visit-request-save`. */
export type VisitRequestBody = z.input<typeof visitRequestBody>;
/** Query of `GET /get-upcomming-visits`; omitted members take the server's defaults. */
export type UpcomingVisitsQuery = Partial<z.output<typeof upcomingVisitsQuery>>;
/** Query of `GET /get-visit-history`; omitted members take the server's defaults. */
export type VisitHistoryQuery = Partial<z.output<typeof visitHistoryQuery>>;
/** Body of `POST /visit-timer-events`. */
export type TimerEventsBody = z.input<typeof timerEventsBody>;
/** Body of `POST /patient-referral-end-visit-note`. */
export type SoapNoteBody = z.input<typeof soapNoteBody>;
/** Body of `PUT /visit/{uuid}/mileage`. */
export type MileageBody = z.input<typeof mileageBody>;
/** Body of `POST /register-fcm-token`. */
export type FcmTokenBody = z.input<typeof fcmTokenBody>;

/** `client.visits`. Unknown and foreign visits are both 404 `visit_not_found`. */
export interface VisitsApi {
  /** `POST /schedule-visit-request-save`: date and time are wall-clock in the clinician's time zone. */
  schedule(body: VisitRequestBody, options?: AuthWriteOptions): Promise<ScheduledVisitRef>;
  /** `GET /get-upcomming-visits`: today's visits and the upcoming ones. */
  upcoming(query?: UpcomingVisitsQuery, options?: ReadOptions): Promise<UpcomingVisits>;
  /** `GET /get-visit-history`: past visits, newest first. */
  history(query?: VisitHistoryQuery, options?: ReadOptions): Promise<Page<VisitRecord>>;
  /** `GET /visit-details/{scheduleUuid}`: one visit, with its SOAP note once completed. */
  details(scheduleUuid: string, options?: ReadOptions): Promise<VisitRecord>;
  /**
   * `POST /visit-timer-events`: start_travel → arrive → start_documentation → complete. A
   * replayed event (same type and time) is not stored twice; an impossible order is 422
   * naming `events.<index>`, and nothing of the batch is stored.
   */
  recordTimerEvents(body: TimerEventsBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `POST /patient-referral-end-visit-note`: the SOAP note; completes the visit. 409 when it has one. */
  submitNote(body: SoapNoteBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `PUT /visit/{uuid}/mileage`: last writer wins by `recorded_at`; an older entry is acknowledged but not applied. */
  recordMileage(scheduleUuid: string, body: MileageBody, options?: AuthWriteOptions): Promise<MessageResult>;
}

/** `client.pushTokens`. */
export interface PushTokensApi {
  /** `POST /register-fcm-token`: this device's FCM token now belongs to the caller. */
  register(body: FcmTokenBody, options?: AuthWriteOptions): Promise<MessageResult>;
}

export function visitsApi(call: Invoker): VisitsApi {
  return {
    schedule: (body, o) => call.data(E['visits.schedule'], { body }, o),
    upcoming: (query, o) => call.data(E['visits.upcoming'], { query }, o),
    history: (query, o) => call.page(E['visits.history'], { query }, o),
    details: (scheduleUuid, o) => call.data(E['visits.details'], { params: { scheduleUuid } }, o),
    recordTimerEvents: (body, o) => call.message(E['visits.recordTimerEvents'], { body }, o),
    submitNote: (body, o) => call.message(E['visits.submitNote'], { body }, o),
    recordMileage: (uuid, body, o) => call.message(E['visits.recordMileage'], { params: { uuid }, body }, o),
  };
}

export function pushTokensApi(call: Invoker): PushTokensApi {
  return {
    register: (body, o) => call.message(E['pushTokens.register'], { body }, o),
  };
}
