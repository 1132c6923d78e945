/** Audio: visit recordings uploaded as multipart, downloaded (whole or by range) with the session's token. */
import type * as z from 'zod';
import type { visitAudioUploadResult } from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, ReadOptions } from '../options.ts';
import type { BinaryResult } from '../transport.ts';

/** `data` of `POST /visit-audio-upload`: `url` is the authorized download route of the recording. */
export type VisitAudioUpload = z.output<typeof visitAudioUploadResult>;
/** A downloaded recording: `status` 206 with `contentRange` for a range. */
export type AudioDownload = BinaryResult;

/** `client.audio`. */
export interface AudioApi {
  /**
   * `POST /visit-audio-upload`: a FormData with the file part `audio` (m4a, wav or mp3, at most
   * 50 MB; the type is decided from the bytes) and `schedule_uuid`. 413 over the cap, 422 not
   * audio or a missing field, 404 for a visit that is not the caller's.
   */
  upload(form: FormData, options?: AuthWriteOptions): Promise<VisitAudioUpload>;
  /** `GET /audio/{uuid}`: the caller's recording, or bytes `start`–`end` (inclusive) of it; 416 past the end. */
  download(uuid: string, options?: ReadOptions & { readonly range?: { readonly start: number; readonly end?: number } }): Promise<AudioDownload>;
}

export function audioApi(call: Invoker): AudioApi {
  return {
    upload: (form, o) => call.data(E['audio.upload'], { body: form }, o),
    download: (uuid, o) =>
      call.binary(
        E['audio.download'],
        { params: { uuid }, ...(o?.range ? { headers: { range: `bytes=${o.range.start}-${o.range.end ?? ''}` } } : {}) },
        o,
      ),
  };
}
