import * as z from 'zod';
import { pathId } from './common.ts';

/**
 * Audio in (clinician-api.md: POST /visit-audio-upload; docs/audio.md): the text fields of the
 * multipart upload (the file part is `audio`), its answer, and the download route's path.
 */
export const visitAudioUploadFields = z.object({
  schedule_uuid: z.uuid('must be a visit uuid'),
});
export type VisitAudioUploadFields = z.infer<typeof visitAudioUploadFields>;

/** `url` is this API's authorized download route (bearer token), never a public path. */
export const visitAudioUploadResult = z.object({
  url: z.string(),
  uuid: z.string(),
  bytes: z.number().int(),
  format: z.enum(['m4a', 'wav', 'mp3']),
});

export const audioUuidParams = z.object({ uuid: pathId });
