import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Audio at rest: AES-256-GCM in frames, so a 100 MB recording is encrypted and decrypted as a
 * stream (never whole in memory) and a byte range can be read without the frames before it.
 *
 * Layout: an 8-byte header `FCA1` + the plaintext frame size (uint32 BE), then frames of
 * `[plaintext length: uint32 BE][nonce: 12][ciphertext][tag: 16]`. Every frame has its own
 * random nonce; its associated data is `fca1:<file id>:<frame index>:<last?1:0>`, so a frame
 * moved to another file or position, a dropped frame, or a file cut at a frame boundary
 * (no frame marked last) fails to decrypt. In a finished file every frame but the last holds
 * exactly `frameSize` bytes, which is what makes range reads computable.
 *
 * Resumable uploads (tus) append frames as bytes arrive, none marked last: their length is
 * checked against the committed offset recorded in the database instead.
 */
export const FRAME_SIZE = 64 * 1024;
export const HEADER_BYTES = 8;
const MAGIC = Buffer.from('FCA1');
const LEN = 4;
const NONCE = 12;
const TAG = 16;
export const FRAME_OVERHEAD = LEN + NONCE + TAG;

export function header(frameSize = FRAME_SIZE): Buffer {
  const h = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(h, 0);
  h.writeUInt32BE(frameSize, 4);
  return h;
}

const aad = (fileId: string, index: number, last: boolean) => Buffer.from(`fca1:${fileId}:${index}:${last ? 1 : 0}`);

/** One frame as its pieces (length and nonce, ciphertext, tag): pushed as they are, not copied together. */
function framePieces(key: Buffer, fileId: string, index: number, last: boolean, plain: Buffer): Buffer[] {
  const head = Buffer.allocUnsafe(LEN + NONCE);
  head.writeUInt32BE(plain.length, 0);
  randomBytes(NONCE).copy(head, LEN);
  const cipher = createCipheriv('aes-256-gcm', key, head.subarray(LEN));
  cipher.setAAD(aad(fileId, index, last));
  const body = cipher.update(plain);
  const final = cipher.final();
  return final.length ? [head, body, final, cipher.getAuthTag()] : [head, body, cipher.getAuthTag()];
}

export function sealFrame(key: Buffer, fileId: string, index: number, last: boolean, plain: Buffer): Buffer {
  return Buffer.concat(framePieces(key, fileId, index, last, plain));
}

export class AudioIntegrityError extends Error {
  override readonly name = 'AudioIntegrityError';
}

/**
 * Plaintext in, a finished encrypted file out (header, then frames, the final one marked).
 * One frame is held back until the next byte arrives, so the last frame is known at flush.
 */
export class FrameEncryptor extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private index = 0;
  private full: Buffer | null = null;
  constructor(
    private readonly key: Buffer,
    private readonly fileId: string,
    private readonly opts: { frameSize?: number; withHeader?: boolean; markLast?: boolean; firstIndex?: number } = {},
  ) {
    super();
    this.index = opts.firstIndex ?? 0;
    if (opts.withHeader !== false) this.push(header(this.frameSize));
  }
  private get frameSize() {
    return this.opts.frameSize ?? FRAME_SIZE;
  }
  /** Frames emitted so far (tus records it to continue the numbering on the next PATCH). */
  get framesWritten(): number {
    return this.index;
  }
  private sealAndPush(last: boolean, plain: Buffer): void {
    for (const piece of framePieces(this.key, this.fileId, this.index++, last, plain)) this.push(piece);
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let offset = 0;
    while (offset < chunk.length) {
      const take = Math.min(this.frameSize - this.pendingBytes, chunk.length - offset);
      this.pending.push(chunk.subarray(offset, offset + take));
      this.pendingBytes += take;
      offset += take;
      if (this.pendingBytes === this.frameSize) {
        if (this.full) this.sealAndPush(false, this.full);
        // A frame taken whole from one chunk is a view of it, not a copy.
        this.full = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
        this.pending = [];
        this.pendingBytes = 0;
      }
    }
    done();
  }
  override _flush(done: TransformCallback): void {
    const markLast = this.opts.markLast !== false;
    const rest = Buffer.concat(this.pending);
    if (this.full) {
      // A file of whole frames ends on a full frame; an empty final frame would also do, but
      // marking the full one keeps "every frame but the last is full" true either way.
      if (rest.length === 0) {
        this.sealAndPush(markLast, this.full);
      } else {
        this.sealAndPush(false, this.full);
        this.sealAndPush(markLast, rest);
      }
    } else if (rest.length > 0 || markLast) {
      this.sealAndPush(markLast, rest);
    }
    done();
  }
}

/**
 * Encrypted frames in, plaintext out. `firstIndex` and `skipHeader` serve range reads that
 * start at a frame boundary; `requireLast` (finished files) rejects a file whose last frame
 * is missing; `lastIndex` lets a range read that stops early know which frame would be last.
 */
export class FrameDecryptor extends Transform {
  private buf: Buffer[] = [];
  private bufBytes = 0;
  private index: number;
  private headerLeft: number;
  private sawLast = false;
  constructor(
    private readonly key: Buffer,
    private readonly fileId: string,
    private readonly opts: { firstIndex?: number; withHeader?: boolean; requireLast?: boolean; lastIndex?: number } = {},
  ) {
    super();
    this.index = opts.firstIndex ?? 0;
    this.headerLeft = opts.withHeader === false ? 0 : HEADER_BYTES;
  }
  get plaintextFrames(): number {
    return this.index;
  }
  private takeBytes(n: number): Buffer {
    const all = this.buf.length === 1 ? this.buf[0]! : Buffer.concat(this.buf);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.buf = rest.length ? [rest] : [];
    this.bufBytes = rest.length;
    return out;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.buf.push(chunk);
    this.bufBytes += chunk.length;
    try {
      if (this.headerLeft > 0) {
        if (this.bufBytes < this.headerLeft) return done();
        const h = this.takeBytes(this.headerLeft);
        if (this.headerLeft === HEADER_BYTES && !h.subarray(0, 4).equals(MAGIC)) throw new AudioIntegrityError('not an encrypted audio file');
        this.headerLeft = 0;
      }
      for (;;) {
        if (this.bufBytes < LEN) break;
        const first = this.buf[0]!.length >= LEN ? this.buf[0]! : Buffer.concat(this.buf);
        const plainLen = first.readUInt32BE(0);
        const frameLen = LEN + NONCE + plainLen + TAG;
        if (plainLen > 16 * 1024 * 1024) throw new AudioIntegrityError('corrupt frame length');
        if (this.bufBytes < frameLen) break;
        const frame = this.takeBytes(frameLen);
        if (this.sawLast) throw new AudioIntegrityError('data after the last frame');
        this.push(this.open(frame, plainLen));
      }
      done();
    } catch (err) {
      done(err as Error);
    }
  }
  private open(frame: Buffer, plainLen: number): Buffer {
    const nonce = frame.subarray(LEN, LEN + NONCE);
    const body = frame.subarray(LEN + NONCE, LEN + NONCE + plainLen);
    const tag = frame.subarray(LEN + NONCE + plainLen);
    // The frame says nothing about being last: try as stated by position when known, else
    // both (a wrong guess fails authentication, so the flag still cannot be forged).
    const guesses = this.opts.lastIndex !== undefined ? [this.index === this.opts.lastIndex] : [false, true];
    for (const last of guesses) {
      try {
        const d = createDecipheriv('aes-256-gcm', this.key, nonce);
        d.setAAD(aad(this.fileId, this.index, last));
        d.setAuthTag(tag);
        const plain = Buffer.concat([d.update(body), d.final()]);
        this.index++;
        if (last) this.sawLast = true;
        return plain;
      } catch {
        // next guess
      }
    }
    throw new AudioIntegrityError(`audio frame ${this.index} does not authenticate`);
  }
  override _flush(done: TransformCallback): void {
    if (this.bufBytes > 0 || this.headerLeft > 0) return done(new AudioIntegrityError('truncated audio file'));
    if (this.opts.requireLast && !this.sawLast) return done(new AudioIntegrityError('audio file is missing its last frame'));
    done();
  }
}

/** Where plaintext byte `pos` lives in a finished file: its frame and that frame's ciphertext offset. */
export function frameOf(pos: number, frameSize = FRAME_SIZE): { index: number; cipherOffset: number; within: number } {
  const index = Math.floor(pos / frameSize);
  return { index, cipherOffset: HEADER_BYTES + index * (frameSize + FRAME_OVERHEAD), within: pos - index * frameSize };
}

/** Index of the last frame of a finished file of `bytes` plaintext bytes. */
export function lastFrameIndex(bytes: number, frameSize = FRAME_SIZE): number {
  return bytes === 0 ? 0 : Math.ceil(bytes / frameSize) - 1;
}

/** Ciphertext size of a finished file of `bytes` plaintext bytes. */
export function encryptedSize(bytes: number, frameSize = FRAME_SIZE): number {
  const frames = lastFrameIndex(bytes, frameSize) + 1;
  return HEADER_BYTES + frames * FRAME_OVERHEAD + bytes;
}

export const newDataKey = () => randomBytes(32);
