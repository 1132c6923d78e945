import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { and, eq, lt } from 'drizzle-orm';
import { DataStore, ERRORS, Upload } from '@tus/utils';
import { audioUploads } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { Invalid, NotFound } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { FrameDecryptor, FrameEncryptor, HEADER_BYTES, header, newDataKey } from './frames.ts';

const TABLE = 'audio_uploads';
const KEY_COLUMN = 'data_key_enc';
const ID = /^[a-f0-9]{32}$/;

/** Counts what flows through; fails at the end when it is not `expected` bytes. */
class Counter extends Transform {
  bytes = 0;
  constructor(private readonly expected?: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    done(null, chunk);
  }
  override _flush(done: TransformCallback): void {
    if (this.expected !== undefined && this.bytes !== this.expected) return done(new Error('upload is shorter or longer than recorded'));
    done();
  }
}

/**
 * The tus data store: partial uploads as encrypted frames under `<data dir>/audio/uploads/<id>`
 * (never plaintext, also mid-upload), one row per upload in `audio_uploads` holding the
 * owner, the committed offset and the wrapped data key.
 *
 * Each PATCH appends frames (none marked last: the file is unfinished by nature) and then
 * records the new offset and file length in one update; an append cut short by a crash is
 * truncated away before the next one, so the file never holds bytes the row does not count.
 * A finished upload is handed to `services.audio.fromUpload`, which re-encrypts it as a
 * stored file (with the finished-file framing) and deletes the upload.
 *
 * Partial uploads stay on the local disk whatever AUDIO_STORE says (S3 has no append): behind
 * a load balancer, route `/uploads/` requests of one upload to one node (docs/audio.md).
 */
export class EncryptedUploadStore extends DataStore {
  private readonly root: string;
  /** Upload ids named for a request but not created yet → their owner (see `nameFor`). */
  private readonly pendingOwners = new Map<string, string>();
  constructor(private readonly deps: { db: Db; clock: Clock; config: Config; phi: PhiCrypto }) {
    super();
    this.extensions = ['creation', 'creation-defer-length', 'termination', 'expiration'];
    this.root = path.join(deps.config.dataDir, 'audio', 'uploads');
  }

  private fileOf(id: string): string {
    if (!ID.test(id)) throw ERRORS.FILE_NOT_FOUND;
    return path.join(this.root, id);
  }
  private keyOf(id: string, sealed: string): Buffer {
    return Buffer.from(this.deps.phi.open(sealed, TABLE, KEY_COLUMN, id) ?? '', 'base64');
  }
  private async row(id: string) {
    if (!ID.test(id)) return null;
    const [r] = await this.deps.db.select().from(audioUploads).where(eq(audioUploads.id, id));
    return r ?? null;
  }

  /** A new upload id owned by `userId` (the tus naming function; `create` picks the owner up). */
  nameFor(userId: string): string {
    const id = randomBytes(16).toString('hex');
    this.pendingOwners.set(id, userId);
    // A POST that fails before `create` must not leave its entry behind for long.
    setTimeout(() => this.pendingOwners.delete(id), 60_000).unref();
    return id;
  }

  /** The owner of an upload, or null when there is none. */
  async ownerOf(id: string): Promise<string | null> {
    return (await this.row(id))?.userId ?? null;
  }

  override async create(upload: Upload): Promise<Upload> {
    const userId = this.pendingOwners.get(upload.id);
    if (!userId) throw ERRORS.FILE_NOT_FOUND;
    this.pendingOwners.delete(upload.id);
    const now = this.deps.clock.now();
    const key = newDataKey();
    await fs.mkdir(this.root, { recursive: true, mode: 0o700 });
    await fs.writeFile(this.fileOf(upload.id), header(), { mode: 0o600, flag: 'wx' });
    await this.deps.db.insert(audioUploads).values({
      id: upload.id,
      userId,
      size: upload.size ?? null,
      offset: 0,
      frames: 0,
      cipherBytes: HEADER_BYTES,
      dataKeyEnc: this.deps.phi.seal(key.toString('base64'), TABLE, KEY_COLUMN, upload.id) ?? '',
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.getExpiration()),
    });
    // Client metadata (often a file name, which can be PHI) is not kept.
    return new Upload({ id: upload.id, offset: 0, ...(upload.size !== undefined ? { size: upload.size } : {}), creation_date: now.toISOString() });
  }

  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    const r = await this.row(id);
    if (!r) throw ERRORS.FILE_NOT_FOUND;
    if (r.offset !== offset) throw ERRORS.INVALID_OFFSET;
    const file = this.fileOf(id);
    // Bytes after the recorded length are an append that never got recorded (a crash).
    await fs.truncate(file, r.cipherBytes);
    const counter = new Counter();
    const enc = new FrameEncryptor(this.keyOf(id, r.dataKeyEnc), id, { withHeader: false, markLast: false, firstIndex: r.frames });
    const out = createWriteStream(file, { flags: 'a', mode: 0o600 });
    try {
      await pipeline(stream, counter, enc, out);
    } catch (err) {
      await fs.truncate(file, r.cipherBytes).catch(() => {});
      throw err;
    }
    const cipherBytes = (await fs.stat(file)).size;
    const next = r.offset + counter.bytes;
    await this.deps.db
      .update(audioUploads)
      .set({ offset: next, frames: enc.framesWritten, cipherBytes })
      .where(eq(audioUploads.id, id));
    return next;
  }

  override async getUpload(id: string): Promise<Upload> {
    const r = await this.row(id);
    if (!r) throw ERRORS.FILE_NOT_FOUND;
    return new Upload({ id, offset: r.offset, ...(r.size !== null ? { size: r.size } : {}), creation_date: r.createdAt.toISOString() });
  }

  override async declareUploadLength(id: string, length: number): Promise<void> {
    await this.deps.db.update(audioUploads).set({ size: length }).where(eq(audioUploads.id, id));
  }

  override async remove(id: string): Promise<void> {
    await this.deps.db.delete(audioUploads).where(eq(audioUploads.id, id));
    await fs.rm(this.fileOf(id), { force: true });
  }

  /**
   * Deletes the row in the caller's transaction and leaves the file: if that transaction rolls
   * back, the upload is intact; once it commits, the file has no row and the expiry sweep
   * removes it (files without a row older than a minute).
   */
  async removeIn(tx: Db, id: string): Promise<void> {
    await tx.delete(audioUploads).where(eq(audioUploads.id, id));
  }

  override getExpiration(): number {
    return this.deps.config.audio.uploadExpiryHours * 3_600_000;
  }

  /** Expired uploads, and files whose row is gone (a deleted account), are removed. */
  override async deleteExpired(): Promise<number> {
    const now = this.deps.clock.now();
    const expired = await this.deps.db.delete(audioUploads).where(lt(audioUploads.expiresAt, now)).returning({ id: audioUploads.id });
    for (const e of expired) await fs.rm(this.fileOf(e.id), { force: true });
    let orphans = 0;
    const names = await fs.readdir(this.root).catch(() => [] as string[]);
    for (const name of names) {
      if (!ID.test(name)) continue;
      const stat = await fs.stat(path.join(this.root, name)).catch(() => null);
      // A file younger than a minute may belong to a POST whose row is being inserted.
      if (!stat || now.getTime() - stat.mtimeMs < 60_000) continue;
      if (!(await this.row(name))) {
        await fs.rm(path.join(this.root, name), { force: true });
        orphans++;
      }
    }
    return expired.length + orphans;
  }

  /** The plaintext of the user's finished upload; 404 for unknown or foreign ids, 422 unfinished. */
  async openFinished(userId: string, id: string, tx: Db = this.deps.db): Promise<Readable> {
    // Locked in the caller's transaction: two hand-overs of one upload cannot both succeed.
    const r = ID.test(id)
      ? (await tx.select().from(audioUploads).where(and(eq(audioUploads.id, id), eq(audioUploads.userId, userId))).for('update'))[0]
      : undefined;
    if (!r) throw new NotFound('Upload not found', 'upload_not_found');
    if (r.size === null || r.offset !== r.size) throw Invalid.field('upload_id', 'the upload is not finished', 'upload_unfinished');
    const cipher = createReadStream(this.fileOf(id), { start: 0, end: r.cipherBytes - 1 });
    const plain = new FrameDecryptor(this.keyOf(id, r.dataKeyEnc), id, { lastIndex: -1 });
    const counter = new Counter(r.offset);
    cipher.on('error', (err) => plain.destroy(err));
    plain.on('error', (err) => counter.destroy(err));
    return cipher.pipe(plain).pipe(counter);
  }
}

export type UploadStore = EncryptedUploadStore;

export function createUploadStore(deps: { db: Db; clock: Clock; config: Config; phi: PhiCrypto }): UploadStore {
  return new EncryptedUploadStore(deps);
}
