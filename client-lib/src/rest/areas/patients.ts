/** Patients, their charts and referrals' visits, the general summary, and signed documents. */
import type * as z from 'zod';
import type {
  chartDetail,
  documentRecord,
  generalSummary,
  generalSummaryQuery,
  patient,
  patientCreateBody,
  patientCreated,
  patientListQuery,
  patientUpdateBody,
  scheduledVisit,
  scheduledVisitsBody,
} from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, Page, ReadOptions } from '../options.ts';

/** A patient as the API lists it, with its open referral and next visit (`Patient` in the OpenAPI document). */
export type PatientRecord = z.output<typeof patient>;
/** `data` of `POST /patient/create`: the patient and the referral opened with it. */
export type PatientCreated = z.output<typeof patientCreated>;
/** A patient's chart reached through a referral. */
export type ChartDetail = z.output<typeof chartDetail>;
/** A visit of a referral (`POST /patient/get-scheduled-visits/{referralUuid}`). */
export type ScheduledVisit = z.output<typeof scheduledVisit>;
/** Counts over the caller's patients, visits and notes in a date range. */
export type GeneralSummary = z.output<typeof generalSummary>;
/** A signed visit note (`GET /document/list`). */
export type DocumentRecord = z.output<typeof documentRecord>;
/** Query of `GET /patient/my-patients`; omitted members take the server's defaults. */
export type PatientListQuery = Partial<z.output<typeof patientListQuery>>;
/** Query of `GET /patient/general-summary` (default `dateRange`: `last_30_days`). */
export type GeneralSummaryQuery = Partial<z.output<typeof generalSummaryQuery>>;
/** Body of `POST /patient/create`; `referral` describes the referral opened with it. */
export type PatientCreateBody = z.input<typeof patientCreateBody>;
/** Body of `PUT /patient/update/{uuid}`; every member optional. */
export type PatientUpdateBody = z.input<typeof patientUpdateBody>;
/** Body of `POST /patient/get-scheduled-visits/{referralUuid}`: an optional month. */
export type ScheduledVisitsBody = z.input<typeof scheduledVisitsBody>;

/** `client.patients`. Unknown and foreign uuids are both 404. */
export interface PatientsApi {
  /** `GET /patient/my-patients`: newest first; `search_by_name` matches word prefixes. */
  list(query?: PatientListQuery, options?: ReadOptions): Promise<Page<PatientRecord>>;
  /** `POST /patient/create`: the patient and its open referral. */
  create(body: PatientCreateBody, options?: AuthWriteOptions): Promise<PatientCreated>;
  /** `PUT /patient/update/{uuid}`: name or contact details. */
  update(patientUuid: string, body: PatientUpdateBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `GET /patient/chart-details/{referralUuid}`. */
  chart(referralUuid: string, options?: ReadOptions): Promise<ChartDetail>;
  /** `POST /patient/get-scheduled-visits/{referralUuid}`: the referral's visits, optionally of one month. */
  scheduledVisits(referralUuid: string, body?: ScheduledVisitsBody, options?: AuthWriteOptions): Promise<ScheduledVisit[]>;
  /** `GET /patient/general-summary`. */
  generalSummary(query?: GeneralSummaryQuery, options?: ReadOptions): Promise<GeneralSummary>;
}

/** `client.documents`. */
export interface DocumentsApi {
  /** `GET /document/list`: the caller's signed visit notes. */
  list(options?: ReadOptions): Promise<DocumentRecord[]>;
}

export function patientsApi(call: Invoker): PatientsApi {
  return {
    list: (query, o) => call.page(E['patients.list'], { query }, o),
    create: (body, o) => call.data(E['patients.create'], { body }, o),
    update: (uuid, body, o) => call.message(E['patients.update'], { params: { uuid }, body }, o),
    chart: (referralUuid, o) => call.data(E['patients.chart'], { params: { referralUuid } }, o),
    scheduledVisits: (referralUuid, body, o) => call.data(E['patients.scheduledVisits'], { params: { referralUuid }, body: body ?? {} }, o),
    generalSummary: (query, o) => call.data(E['patients.generalSummary'], { query }, o),
  };
}

export function documentsApi(call: Invoker): DocumentsApi {
  return {
    list: (o) => call.data(E['documents.list'], {}, o),
  };
}
