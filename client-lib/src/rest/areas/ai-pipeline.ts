/**
 * The AI documentation pipeline: a dictation uploaded for transcription and a SOAP draft,
 * its status (also delivered by the sync feed's `ai_status` rows, so polling is optional),
 * and a retry of a failed run.
 */
import type * as z from 'zod';
import type { aiStatus, processAudioResult } from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, ReadOptions } from '../options.ts';

/** `data` of `POST /ai/process-audio`. */
export type ProcessAudioResult = z.output<typeof processAudioResult>;
/** An AI run's status record: `processing`, `completed` (transcript, SOAP, source map, scores) or `failed` (`error_message`). */
export type AiStatus = z.output<typeof aiStatus>;

/** The pipeline part of `client.ai`. */
export interface AiPipelineApi {
  /**
   * `POST /ai/process-audio`: a FormData with `schedule_uuid`, `discipline`, `encounter_type`
   * and either the file part `audio` (m4a, wav or mp3, at most 100 MB) or `upload_id` (a
   * finished resumable upload). 413 over the cap, 422 naming a bad field, 404 for a visit that
   * is not the caller's.
   */
  processAudio(form: FormData, options?: AuthWriteOptions): Promise<ProcessAudioResult>;
  /** `GET /ai/status/{serverUuid}`: 404 unknown or another clinician's. */
  status(transcriptionUuid: string, options?: ReadOptions): Promise<AiStatus>;
  /** `POST /ai/retry/{serverUuid}`: only from `failed` (409 otherwise). */
  retry(transcriptionUuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
}

export function aiPipelineApi(call: Invoker): AiPipelineApi {
  return {
    processAudio: (form, o) => call.data(E['ai.processAudio'], { body: form }, o),
    status: (serverUuid, o) => call.data(E['ai.status'], { params: { serverUuid } }, o),
    retry: (serverUuid, o) => call.message(E['ai.retry'], { params: { serverUuid } }, o),
  };
}
