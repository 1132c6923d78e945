import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import { audioDeletions, audioFiles, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { Invalid, NotFound, TooLarge, Unavailable } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { isUuid } from '../ids.ts';
import { FRAME_OVERHEAD, FRAME_SIZE, FrameDecryptor, FrameEncryptor, frameOf, lastFrameIndex, newDataKey } from './frames.ts';
import { createObjectStores, type ObjectStore } from './object-store.ts';
import { CONTENT_TYPES, SNIFF_BYTES, sniffAudio, type AudioFormat } from './sniff.ts';
import { createUploadStore, type UploadStore } from './upload-store.ts';

export type { AudioFormat } from './sniff.ts';
export { CONTENT_TYPES, sniffAudio } from './sniff.ts';

export type AudioPurpose = 'visit_audio' | 'ai';

export interface StoredAudio {
  readonly uuid: string;
  readonly userId: string;
  readonly visitId: string;
  readonly bytes: number;
  readonly format: AudioFormat;
  readonly createdAt: Date;
}

/**
 * Encrypted bytes already in the object store but not yet recorded: the multipart reader
 * stages a file part before it knows whether the request's fields are valid (a client may
 * send the file before `schedule_uuid`). `commit` records it (in the caller's transaction,
 * so process-audio can record it with its pipeline row); `discard` removes it.
 */
export interface StagedAudio {
  readonly uuid: string;
  readonly bytes: number;
  readonly format: AudioFormat;
  discard(): Promise<void>;
}

/** The download route; the API prefix is the contract's (server/src/app.ts API_PREFIX). */
export const AUDIO_ROUTE_PREFIX = '/api/therapist/v1/audio/';

const TABLE = 'audio_files';
const KEY_COLUMN = 'data_key_enc';

interface Staged extends StagedAudio {
  readonly store: ObjectStore;
  readonly storageKey: string;
  readonly dataKeyEnc: string;
  readonly userId: string;
}

/**
 * Counts and sniffs the plaintext on its way to the encryptor. A violation (too large, not
 * audio) is remembered and the rest of the input is read and dropped instead of failing the
 * stream: the request body keeps flowing to its end, so the client gets a clean 413/422
 * rather than a reset connection, and nothing more is written.
 */
class Gate extends Transform {
  bytes = 0;
  format: AudioFormat | null = null;
  failure: Error | null = null;
  private head: Buffer[] = [];
  private headBytes = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.failure) return done();
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.failure = new TooLarge(`The audio file is larger than ${Math.floor(this.maxBytes / (1024 * 1024))} MB`, 'audio_too_large');
      this.head = [];
      return done();
    }
    if (this.format) return done(null, chunk);
    this.head.push(chunk);
    this.headBytes += chunk.length;
    if (this.headBytes < SNIFF_BYTES) return done();
    this.decide();
    done();
  }
  private decide() {
    const head = Buffer.concat(this.head);
    this.head = [];
    this.format = sniffAudio(head);
    if (!this.format) {
      this.failure = Invalid.field('audio', 'must be an m4a, wav or mp3 audio file (decided from its content)', 'invalid_audio_type');
      return;
    }
    this.push(head);
  }
  override _flush(done: TransformCallback): void {
    if (!this.failure && !this.format) {
      if (this.headBytes === 0) this.failure = Invalid.field('audio', 'is empty', 'invalid_audio_type');
      else this.decide();
    }
    done();
  }
}

/** Keeps bytes [skip, skip + take) of what flows through (range reads from whole frames). */
class Slice extends Transform {
  private seen = 0;
  constructor(
    private readonly skipBytes: number,
    private readonly keepBytes: number,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const from = Math.max(0, this.skipBytes - this.seen);
    const to = Math.min(chunk.length, this.skipBytes + this.keepBytes - this.seen);
    this.seen += chunk.length;
    done(null, to > from ? chunk.subarray(from, to) : undefined);
  }
}

export interface AudioDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly config: Config;
  readonly phi: PhiCrypto;
  readonly audit: AuditLog;
  /**
   * The request's unit of work (`UnitOfWork.onRollback`): a stored object whose row a request
   * rolls back after `commit` returned (a keyed upload that lost its race) is removed then.
   */
  readonly onRollback?: (undo: () => Promise<void>) => void;
}

export function createAudio(deps: AudioDeps) {
  const { db, config, phi, audit } = deps;
  const stores = createObjectStores(config);
  const uploads: UploadStore = createUploadStore(deps);

  const sealKey = (fileId: string, key: Buffer) => phi.seal(key.toString('base64'), TABLE, KEY_COLUMN, fileId) ?? '';
  const openKey = (fileId: string, sealed: string) => Buffer.from(phi.open(sealed, TABLE, KEY_COLUMN, fileId) ?? '', 'base64');

  async function checkVisit(userId: string, visitId: string, tx: Db = db): Promise<void> {
    if (!isUuid(visitId)) throw new NotFound('Visit not found');
    const [v] = await tx
      .select({ id: visits.id })
      .from(visits)
      .where(and(eq(visits.id, visitId), eq(visits.ownerId, userId), isNull(visits.deletedAt)));
    if (!v) throw new NotFound('Visit not found');
  }

  /** Encrypts `source` into a new object; a violation or a failure leaves no object. */
  async function stage(input: { userId: string; source: Readable; maxBytes: number }): Promise<StagedAudio> {
    const uuid = randomUUID();
    const key = newDataKey();
    const store = stores.current;
    const storageKey = `${input.userId}/${uuid}.fca`;
    const gate = new Gate(input.maxBytes);
    const encrypted = new FrameEncryptor(key, uuid);
    const discard = () => store.delete(storageKey).catch(() => {});
    try {
      // The source is piped, not handed to pipeline(): an error on our side must not destroy
      // a request body the multipart reader still has to finish reading.
      // `pipe` forwards no errors: a client that goes away mid-upload must still end the write.
      input.source.on('error', (err) => gate.destroy(err));
      gate.on('error', (err) => encrypted.destroy(err));
      await store.put(storageKey, input.source.pipe(gate).pipe(encrypted));
    } catch (err) {
      if (gate.failure) {
        await discard();
        throw gate.failure;
      }
      // The upload itself was fine: the store failed it (unreachable, silent, refusing). The
      // recording stays on the device, which sends it again. The clean-up goes to the same
      // failing store, so the answer does not wait for it.
      void discard();
      throw Object.assign(new Unavailable('The audio store could not take the recording right now; try again shortly', 'audio_store_unavailable', { 'retry-after': '30' }), {
        cause: err,
      });
    }
    if (gate.failure || !gate.format) {
      await discard();
      throw gate.failure ?? Invalid.field('audio', 'is empty', 'invalid_audio_type');
    }
    const staged: Staged = {
      uuid,
      bytes: gate.bytes,
      format: gate.format,
      store,
      storageKey,
      dataKeyEnc: sealKey(uuid, key),
      userId: input.userId,
      discard,
    };
    return staged;
  }

  const asStaged = (s: StagedAudio): Staged => {
    if (!('storageKey' in s)) throw new Error('not a staged audio of this service');
    return s as Staged;
  };

  async function commit(
    ctx: AuditContext,
    staged: StagedAudio,
    input: { visitId: string; purpose: AudioPurpose },
    tx?: Db,
  ): Promise<StoredAudio> {
    const s = asStaged(staged);
    const write = async (t: Db) => {
      await checkVisit(s.userId, input.visitId, t);
      const [row] = await t
        .insert(audioFiles)
        .values({
          id: s.uuid,
          userId: s.userId,
          visitId: input.visitId,
          format: s.format,
          bytes: s.bytes,
          store: s.store.kind,
          storageKey: s.storageKey,
          dataKeyEnc: s.dataKeyEnc,
          purpose: input.purpose,
          createdAt: deps.clock.now(),
        })
        .returning({ createdAt: audioFiles.createdAt });
      return { uuid: s.uuid, userId: s.userId, visitId: input.visitId, bytes: s.bytes, format: s.format, createdAt: row!.createdAt };
    };
    const entry = { action: 'create' as const, resourceType: 'audio_file', resourceId: s.uuid, details: { bytes: s.bytes, format: s.format, purpose: input.purpose } };
    // Without its row the object cannot be read (its key is in the row): never left behind.
    deps.onRollback?.(s.discard);
    if (tx) {
      const stored = await write(tx);
      await audit.record(tx, ctx, entry, 'success');
      return stored;
    }
    return audit.around(ctx, entry, (t) => write(t));
  }

  async function rowOf(audioUuid: string, userId?: string) {
    if (!isUuid(audioUuid)) return null;
    const [row] = await db
      .select()
      .from(audioFiles)
      .where(and(eq(audioFiles.id, audioUuid), userId ? eq(audioFiles.userId, userId) : undefined));
    return row ?? null;
  }

  type Row = NonNullable<Awaited<ReturnType<typeof rowOf>>>;

  /** Plaintext of bytes [start, end] (inclusive) of a stored file, read frame by frame. */
  async function plainStream(row: Row, range?: { start: number; end: number }, signal?: AbortSignal): Promise<Readable> {
    const store = stores.byKind(row.store);
    const key = openKey(row.id, row.dataKeyEnc);
    const last = lastFrameIndex(row.bytes);
    if (!range) {
      const cipher = await store.get(row.storageKey, undefined, signal);
      const plain = new FrameDecryptor(key, row.id, { requireLast: true, lastIndex: last });
      cipher.on('error', (err) => plain.destroy(err));
      return cipher.pipe(plain);
    }
    const first = frameOf(range.start);
    const lastOf = frameOf(range.end);
    const lastPlain = Math.min(FRAME_SIZE, row.bytes - lastOf.index * FRAME_SIZE);
    const cipherEnd = lastOf.cipherOffset + FRAME_OVERHEAD + lastPlain - 1;
    const cipher = await store.get(row.storageKey, { start: first.cipherOffset, end: cipherEnd });
    const plain = new FrameDecryptor(key, row.id, {
      withHeader: false,
      firstIndex: first.index,
      lastIndex: last,
      requireLast: lastOf.index === last,
    });
    cipher.on('error', (err) => plain.destroy(err));
    const slice = new Slice(first.within, range.end - range.start + 1);
    plain.on('error', (err) => slice.destroy(err));
    return cipher.pipe(plain).pipe(slice);
  }

  return {
    checkVisit,
    stage,
    commit,

    /**
     * Stores an audio file for one of the user's visits: the visit is checked before any byte
     * is read (another clinician's visit → 404, nothing stored); TooLarge / Invalid (type
     * from the bytes) leave nothing behind.
     */
    async store(
      ctx: AuditContext,
      input: { userId: string; visitId: string; source: Readable; maxBytes: number; purpose: AudioPurpose },
      tx?: Db,
    ): Promise<StoredAudio> {
      await checkVisit(input.userId, input.visitId, tx);
      const staged = await stage(input);
      try {
        return await commit(ctx, staged, { visitId: input.visitId, purpose: input.purpose }, tx);
      } catch (err) {
        await staged.discard();
        throw err;
      }
    },

    /**
     * A finished tus upload of the user, re-encrypted into a stored file (its own key and
     * frames) and then deleted. Unknown, foreign or unfinished upload ids are 404 / 422.
     */
    async fromUpload(ctx: AuditContext, input: { userId: string; uploadId: string; visitId: string; purpose: AudioPurpose }, tx?: Db): Promise<StoredAudio> {
      // Every database step runs in the caller's transaction when there is one (process-audio
      // records the run in it; PGlite has one connection, so a step outside it would wait on it).
      const handOver = async (t: Db) => {
        await checkVisit(input.userId, input.visitId, t);
        const source = await uploads.openFinished(input.userId, input.uploadId, t);
        const staged = await stage({ userId: input.userId, source, maxBytes: config.audio.aiAudioMaxBytes });
        try {
          const stored = await commit(ctx, staged, { visitId: input.visitId, purpose: input.purpose }, t);
          await uploads.removeIn(t, input.uploadId);
          return stored;
        } catch (err) {
          await staged.discard();
          throw err;
        }
      };
      if (tx) return handOver(tx);
      const stored = await db.transaction((t) => handOver(t));
      await fs.rm(path.join(config.dataDir, 'audio', 'uploads', input.uploadId), { force: true });
      return stored;
    },

    /**
     * Runs `fn` on the decrypted file (a 0600 file in a 0700 temp directory), removed after,
     * whatever happens. For the pipeline's ffprobe/ffmpeg, which need a path. `signal` (a job's)
     * gives up the read: the store's request and the copy.
     */
    async withPlainFile<T>(audioUuid: string, fn: (path: string) => Promise<T>, signal?: AbortSignal): Promise<T> {
      const row = await rowOf(audioUuid);
      if (!row) throw new NotFound('Audio not found');
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fieldchart-audio-'));
      try {
        await fs.chmod(dir, 0o700);
        const file = path.join(dir, `audio.${row.format}`);
        await pipeline(await plainStream(row, undefined, signal), createWriteStream(file, { mode: 0o600, flags: 'wx' }), signal ? { signal } : {});
        return await fn(file);
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },

    /** The authorized download route of this API (bearer token; never a public path). */
    downloadUrl(audioUuid: string): string {
      return `${config.appUrl}${AUDIO_ROUTE_PREFIX}${audioUuid}`;
    },

    /** Metadata of the user's file, or null (unknown or another tenant's). */
    async find(userId: string, audioUuid: string): Promise<StoredAudio | null> {
      const row = await rowOf(audioUuid, userId);
      return row ? { uuid: row.id, userId: row.userId, visitId: row.visitId, bytes: row.bytes, format: row.format as AudioFormat, createdAt: row.createdAt } : null;
    },

    /**
     * Opens the user's file for download, all of it or a byte range (already validated
     * against `bytes` by the caller via `find`). Audited as a PHI read.
     */
    async open(ctx: AuditContext, userId: string, audioUuid: string, range?: { start: number; end: number }) {
      return audit.around(ctx, { action: 'read', resourceType: 'audio_file', resourceId: audioUuid, details: range ? { range: [range.start, range.end] } : {} }, async () => {
        const row = await rowOf(audioUuid, userId);
        if (!row) throw new NotFound('Audio not found');
        return { bytes: row.bytes, format: row.format as AudioFormat, contentType: CONTENT_TYPES[row.format as AudioFormat], stream: await plainStream(row, range) };
      });
    },

    /** Deletes the objects of deleted rows (queued by the audio_files delete trigger). */
    async purgeDeleted(limit = 500): Promise<number> {
      const queued = await db.select().from(audioDeletions).orderBy(asc(audioDeletions.id)).limit(limit);
      const done: number[] = [];
      for (const q of queued) {
        try {
          await stores.byKind(q.store).delete(q.storageKey);
          done.push(q.id);
        } catch {
          // left queued; the next sweep tries again
        }
      }
      if (done.length) await db.delete(audioDeletions).where(inArray(audioDeletions.id, done));
      return done.length;
    },

    /** Resumable uploads (the tus endpoint's data store). */
    uploads,
  };
}

export type AudioService = ReturnType<typeof createAudio>;
