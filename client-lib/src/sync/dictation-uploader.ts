/**
 * Sends the device's dictations to the server, one at a time, oldest first: the audio by tus
 * (resumable: the upload URL is kept on the device, and after a cut the upload goes on from the
 * offset the server reports), then `POST /ai/process-audio` with the upload's id under an
 * Idempotency-Key kept with the recording (a lost answer replays the same run, never a second).
 * Only once that call is acknowledged does the audio leave the device.
 *
 * Failures are state, never rejections: a network failure, a 5xx, 409/423/429 are tried again
 * with backoff; an expired upload (404/410 on the stored URL) starts a new one; a 401 refreshes
 * the session first; any other 4xx marks the dictation `rejected` (kept, audio included, for the
 * app to retry or discard) and is reported to the sync status. A dictation for a visit whose
 * own writes are still queued waits for them (the server would not know the visit yet).
 */
import { Upload, type DetailedError } from 'tus-js-client';
import { FieldchartApiError, type RestClient } from '../rest/index.ts';
import type { LocalDb } from '../storage/local-db.ts';
import {
  dictationsToSend,
  markOnServer,
  markRejected,
  markUploaded,
  readDictationRange,
  recordDictationAttempt,
  setUploadedBytes,
  setUploadUrl,
  type StoredDictation,
} from '../storage/dictation-store.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';

/** One PATCH request carries at most this much (4 stored chunks): memory stays bounded, progress is stored per request. */
export const TUS_REQUEST_BYTES = 1024 * 1024;

export interface DictationUploaderOptions {
  readonly db: LocalDb;
  /** The tus endpoint: `<baseUrl>/api/therapist/v1/uploads`. */
  readonly endpoint: string;
  readonly rest: RestClient;
  /** A fresh access token (refreshed first when close to expiry), or null when signed out. */
  readonly token: () => Promise<string | null>;
  /** The server refused the token: get a new one (throws when the session is over). */
  readonly refresh: () => Promise<void>;
  /** Whether uploading may go on (signed in, not halted). */
  readonly active: () => boolean;
  /** Queued writes about the visit not yet acknowledged: process-audio waits for them. */
  readonly visitPending: (scheduleUuid: string) => Promise<number>;
  /** A dictation's state or progress changed. */
  readonly onChange: (id: string) => void;
  /** The server refused a dictation (4xx). */
  readonly onRejected: (d: StoredDictation, code: string, message: string) => void;
  /** A transient failure, for the sync status. */
  readonly onError: (code: string, message: string) => void;
  /** Runs `fn` alone among the app's tabs (navigator.locks) when several share the database. */
  readonly exclusive?: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly backoff?: BackoffOptions;
}

/** A refusal that ends the attempt for good (4xx other than the retryable ones). */
class Refused extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** A failure worth trying again after a pause. */
class Transient extends Error {
  constructor(readonly code: string, message: string, readonly retryAfterMs = 0) {
    super(message);
  }
}

/** The upload was stopped on purpose (sign-out, close): not a failure, nothing to record. */
class Paused extends Error {
  constructor() {
    super('the upload was paused');
  }
}

const RETRYABLE_4XX = new Set([408, 409, 423, 425, 429]);

export class DictationUploader {
  private running: Promise<void> | null = null;
  private again = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The upload in flight, and how to end its pass: tus's `abort` calls neither onSuccess nor onError. */
  private current: { readonly upload: Upload; readonly stop: () => void } | null = null;
  private stopped = false;
  private readonly backoff: Backoff;
  /** Bytes sent of the dictation being uploaded (the server may confirm fewer). */
  private readonly sent = new Map<string, number>();

  constructor(private readonly opts: DictationUploaderOptions) {
    this.backoff = new Backoff(opts.backoff);
  }

  /** The dictation the uploader is sending now, and how many of its bytes have left the device. */
  progressOf(id: string): number | null {
    return this.sent.get(id) ?? null;
  }

  /** Looks for work now (a new dictation, the connection is back, a visit's writes were acknowledged). */
  pump(options: { resetBackoff?: boolean } = {}): void {
    if (this.stopped) return;
    if (options.resetBackoff) this.backoff.reset();
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.running = this.runExclusive().finally(() => {
      this.running = null;
      if (this.again && !this.stopped) {
        this.again = false;
        this.pump();
      }
    });
  }

  /** Stops the upload in flight (sign-out, close); `pump` starts again. */
  async pause(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.again = false;
    const up = this.current;
    this.current = null;
    await up?.upload.abort(false).catch(() => undefined);
    // Without this the pass would wait for an answer that abort silenced, and close() with it.
    up?.stop();
    await this.running?.catch(() => undefined);
  }

  async close(): Promise<void> {
    this.stopped = true;
    await this.pause();
  }

  /** Resolves when no pass is running (tests, close). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private runExclusive(): Promise<void> {
    const run = () => this.run().catch((err: unknown) => this.opts.onError('dictation_failed', err instanceof Error ? err.message : String(err)));
    return this.opts.exclusive ? this.opts.exclusive(run) : run();
  }

  private async run(): Promise<void> {
    const { db } = this.opts;
    for (const d of await dictationsToSend(db)) {
      if (!this.opts.active() || this.stopped) return;
      try {
        if (d.state === 'on_device') {
          await this.upload(d);
          await markUploaded(db, d.id);
          this.sent.delete(d.id);
          this.opts.onChange(d.id);
        }
        if ((await this.opts.visitPending(d.schedule_uuid)) > 0) {
          // The visit (or a change to it) is still in the outbox: the server would answer 404. The
          // pump on its acknowledgement comes back for it.
          continue;
        }
        await this.process(d);
        this.backoff.reset();
        this.opts.onChange(d.id);
      } catch (err) {
        this.sent.delete(d.id);
        if (err instanceof Paused || !this.opts.active() || this.stopped) return;
        if (err instanceof Refused) {
          await markRejected(db, d.id, err.code, err.message);
          this.opts.onRejected(d, err.code, err.message);
          this.opts.onChange(d.id);
          continue;
        }
        const t = err instanceof Transient ? err : new Transient('dictation_failed', err instanceof Error ? err.message : String(err));
        await recordDictationAttempt(db, d.id, t.code, t.message);
        this.opts.onError(t.code, t.message);
        this.opts.onChange(d.id);
        this.retryLater(t.retryAfterMs);
        // Later dictations would meet the same network: wait for the retry.
        return;
      }
    }
  }

  private retryLater(atLeastMs: number): void {
    if (this.stopped) return;
    const delay = this.backoff.next(atLeastMs);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, delay);
  }

  /** The tus upload, resumed at the server's offset when the device holds its URL. */
  private async upload(d: StoredDictation): Promise<void> {
    let url = d.upload_url;
    // Twice at most: a refused token is refreshed once, an expired upload is replaced once.
    for (let round = 0; ; round++) {
      try {
        await this.tusOnce(d, url);
        return;
      } catch (err) {
        if (err instanceof Paused) throw err;
        const status = (err as DetailedError).originalResponse?.getStatus() ?? 0;
        if (round < 2 && status === 401) {
          await this.opts.refresh();
          continue;
        }
        if (round < 2 && url !== null && (status === 404 || status === 410)) {
          // The server no longer has the upload (expired, or consumed): start a new one.
          await setUploadUrl(this.opts.db, d.id, null);
          url = null;
          continue;
        }
        throw classifyTus(err, status);
      }
    }
  }

  private async tusOnce(d: StoredDictation, uploadUrl: string | null): Promise<void> {
    const { db } = this.opts;
    const token = await this.opts.token();
    if (!token) throw new Transient('signed_out', 'not signed in');
    let urlStored: Promise<void> = Promise.resolve();
    await new Promise<void>((resolve, reject) => {
      const upload: Upload = new Upload(
        // The recording is read from the device database by `fileReader`, not from this value.
        { dictation: d.id } as unknown as Blob,
        {
          // With a stored URL there is no endpoint: a refused HEAD must not silently create a
          // new upload (a 401 is a token to refresh, not a lost upload).
          endpoint: uploadUrl ? null : this.opts.endpoint,
          uploadUrl,
          uploadSize: d.bytes,
          chunkSize: TUS_REQUEST_BYTES,
          retryDelays: null,
          storeFingerprintForResuming: false,
          removeFingerprintOnSuccess: false,
          fileReader: {
            openFile: async () => ({
              size: d.bytes,
              // tus counts a slice by its `size` (a Blob's, or what its Node sources set on a
              // Buffer); a Uint8Array carrying one is a body for XHR and Node's http alike.
              slice: async (start: number, end: number) => {
                const bytes = await readDictationRange(db, d.id, start, end);
                return { value: Object.assign(bytes, { size: bytes.length }), done: end >= d.bytes };
              },
              close: () => undefined,
            }),
          },
          onBeforeRequest: async (req) => {
            req.setHeader('Authorization', `Bearer ${token}`);
            // No byte is sent before the device knows where they go: a cut then resumes there.
            if (req.getMethod() === 'PATCH') await urlStored;
          },
          onUploadUrlAvailable: () => {
            if (upload.url && upload.url !== uploadUrl) urlStored = setUploadUrl(db, d.id, upload.url);
          },
          onProgress: (sent) => {
            this.sent.set(d.id, sent);
            this.opts.onChange(d.id);
          },
          onChunkComplete: (_size, accepted) => {
            void setUploadedBytes(db, d.id, accepted).catch(() => undefined);
          },
          onSuccess: () => resolve(),
          onError: (err) => reject(err),
        },
      );
      this.current = { upload, stop: () => reject(new Paused()) };
      upload.start();
    }).finally(() => {
      this.current = null;
    });
    await urlStored;
  }

  private async process(d: StoredDictation): Promise<void> {
    const { db } = this.opts;
    const fresh = (await dictationsToSend(db)).find((x) => x.id === d.id);
    const url = fresh?.upload_url ?? d.upload_url;
    if (!url) throw new Transient('dictation_failed', 'the upload has no URL');
    const uploadId = new URL(url).pathname.split('/').filter(Boolean).pop() ?? '';
    const form = new FormData();
    form.append('upload_id', uploadId);
    form.append('schedule_uuid', d.schedule_uuid);
    form.append('discipline', d.discipline);
    form.append('encounter_type', d.encounter_type);
    let result;
    try {
      result = await this.opts.rest.ai.processAudio(form, { idempotencyKey: d.idempotency_key });
    } catch (err) {
      if (err instanceof FieldchartApiError && err.status >= 400 && err.status < 500 && !RETRYABLE_4XX.has(err.status)) throw new Refused(err.code, err.message);
      if (err instanceof FieldchartApiError) throw new Transient(err.code, err.message, (err.retryAfterSeconds ?? 0) * 1000);
      throw new Transient('network', err instanceof Error ? err.message : String(err));
    }
    await markOnServer(db, d.id, result.transcription_uuid);
  }
}

/** A tus failure as a refusal (4xx that will not change) or a transient failure. */
function classifyTus(err: unknown, status: number): Refused | Transient {
  if (status >= 400 && status < 500 && !RETRYABLE_4XX.has(status)) {
    return new Refused(status === 413 ? 'audio_too_large' : `upload_refused_${status}`, `the server refused the upload (${status})`);
  }
  const retryAfter = Number((err as DetailedError).originalResponse?.getHeader('Retry-After') ?? 0);
  // tus's message names the request and the cause (no audio, no token): kept for diagnosis.
  const detail = err instanceof Error ? `: ${err.message}` : '';
  return new Transient(status === 0 ? 'network' : `upload_failed_${status}`, `${status === 0 ? 'the upload could not reach the server' : `the upload failed (${status})`}${detail}`, Number.isFinite(retryAfter) ? retryAfter * 1000 : 0);
}
