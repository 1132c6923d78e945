import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import type { Readable } from 'node:stream';
import type { z } from 'zod';
import { fieldErrorsFromIssues } from '@fieldchart/schema/rules';
import { AppError, Invalid, type FieldErrors } from '../errors.ts';
import type { AudioService, StagedAudio } from '../services/audio/index.ts';

/**
 * Multipart audio uploads (POST /visit-audio-upload, POST /ai/process-audio): text fields
 * validated with a zod schema (422 naming the field) and ONE file part `audio`, streamed
 * through the audio service's encryptor into the object store, never buffered whole.
 *
 * Part order: when the fields come before the file, they are validated and `check`ed (the
 * visit belongs to the caller) before any byte is stored — another clinician's visit is a
 * 404 with nothing written. When the file comes first (the spec lists `audio` first, and
 * form-data libraries keep the order the app appends), it is streamed into a staged,
 * encrypted object that is deleted on any failure, and the same checks run once the fields
 * have arrived. Either way nothing is recorded unless the whole request is valid.
 *
 * Every failure still reads the request to its end (the rest is discarded as it arrives),
 * so the client receives its 413/422/404 instead of a reset connection. The size cap is
 * enforced while streaming: busboy stops delivering the file one byte past the cap.
 */

/** Registers the multipart parser in the calling plugin's scope only (JSON stays the default elsewhere). */
export async function registerMultipart(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    // The audio service measures the size itself and answers 413 in the contract's shape.
    throwFileSizeLimit: false,
    limits: { fields: 20, fieldSize: 64 * 1024, parts: 40, headerPairs: 100 },
  });
}

export interface AudioMultipartOptions<S extends z.ZodType> {
  /** The text fields (a zod object over strings). */
  readonly fields: S;
  /** The file cap in bytes: over it is 413. */
  readonly maxBytes: number;
  readonly userId: string;
  readonly audio: Pick<AudioService, 'stage'>;
  /** Runs on the validated fields before the file is stored when possible (visit ownership). */
  readonly check?: (fields: z.infer<S>) => Promise<void>;
  /** process-audio may name a finished tus upload (`upload_id`) instead of sending a file part. */
  readonly fileOptional?: boolean;
}

export interface AudioMultipart<T> {
  readonly fields: T;
  /** The staged file (not recorded yet): `services.audio.commit` it, or `discard` it. Null only with `fileOptional`. */
  readonly audio: StagedAudio | null;
}

const drain = (stream: Readable) =>
  new Promise<void>((resolve) => {
    if (stream.readableEnded || stream.destroyed) return resolve();
    stream.on('end', resolve).on('close', resolve).on('error', () => resolve());
    stream.resume();
  });

function zodFieldErrors(error: z.ZodError): FieldErrors {
  return fieldErrorsFromIssues(error.issues, { root: 'body', requiredMessage: true });
}

export async function readAudioMultipart<S extends z.ZodType>(req: FastifyRequest, opts: AudioMultipartOptions<S>): Promise<AudioMultipart<z.infer<S>>> {
  if (!req.isMultipart()) {
    throw Invalid.field('audio', 'must be sent as multipart/form-data with an `audio` file part', 'multipart_required');
  }
  const raw: Record<string, string> = {};
  let staged: StagedAudio | null = null;
  let checked = false;
  let failure: unknown = null;
  const fail = (err: unknown) => {
    failure ??= err;
  };

  try {
    for await (const part of req.parts({ limits: { fileSize: opts.maxBytes + 1 } })) {
      if (part.type === 'field') {
        if (typeof part.value === 'string') raw[part.fieldname] = part.value;
        continue;
      }
      if (part.fieldname !== 'audio' || staged || failure) {
        if (!failure && part.fieldname === 'audio') fail(Invalid.field('audio', 'send one audio file per request', 'too_many_files'));
        await drain(part.file);
        continue;
      }
      // Fields first: validate and check them before a byte of the file is written.
      const early = opts.fields.safeParse(raw);
      if (early.success && opts.check) {
        try {
          await opts.check(early.data);
          checked = true;
        } catch (err) {
          fail(err);
          await drain(part.file);
          continue;
        }
      }
      try {
        staged = await opts.audio.stage({ userId: opts.userId, source: part.file, maxBytes: opts.maxBytes });
      } catch (err) {
        fail(err);
        await drain(part.file);
      }
    }
  } catch (err) {
    // busboy: malformed multipart body, or the client went away mid-upload.
    fail(err instanceof AppError ? err : Invalid.field('audio', 'the multipart body is malformed or incomplete', 'malformed_multipart'));
  }

  const discard = async () => {
    if (staged) await staged.discard();
  };
  if (failure) {
    await discard();
    throw failure;
  }
  const parsed = opts.fields.safeParse(raw);
  if (!parsed.success) {
    await discard();
    throw new Invalid('The upload has invalid fields', zodFieldErrors(parsed.error));
  }
  if (!staged && !opts.fileOptional) throw Invalid.field('audio', 'is required: an m4a, wav or mp3 file part named `audio`', 'audio_required');
  if (!checked && opts.check) {
    try {
      await opts.check(parsed.data);
    } catch (err) {
      await discard();
      throw err;
    }
  }
  return { fields: parsed.data, audio: staged };
}
