/**
 * The bytes Chromium keeps of IndexedDB, as a reader with the files in hand would see them.
 * A value can sit in a profile in ways a plain byte search misses:
 *
 * - LevelDB tables (`*.ldb`) compress each block with Snappy, which replaces repeated runs
 *   by back-references: a text may be split across them;
 * - the LevelDB log (`*.log`) cuts records into 32 KiB blocks, each with a 7-byte header
 *   that may fall inside a text;
 * - Chromium may compress a large value with Snappy itself, and keeps values over its
 *   threshold as files of their own (`*.indexeddb.blob/`).
 *
 * `storedViews` answers, for each file, its raw bytes plus what those layers decode to, so
 * that a search over the views finds what a search over the raw bytes could miss.
 */
import fs from 'node:fs';
import path from 'node:path';
import SnappyJS from 'snappyjs';
import { filesUnder } from './device-bytes.ts';

/** LevelDB's table magic number, little-endian, in the last 8 bytes of a table file. */
const TABLE_MAGIC = Buffer.from('57fb808b247547db', 'hex');
const FOOTER_BYTES = 48;
const BLOCK_TRAILER_BYTES = 5;
const LOG_BLOCK_BYTES = 32 * 1024;
const LOG_HEADER_BYTES = 7;

function varint(bytes: Buffer, at: number): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  for (let i = at; i < bytes.length && shift <= 49; i++) {
    const b = bytes[i] as number;
    value += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return { value, next: i + 1 };
    shift += 7;
  }
  throw new Error('bad varint');
}

function snappy(bytes: Buffer): Buffer | null {
  try {
    return Buffer.from(SnappyJS.uncompress(bytes));
  } catch {
    return null;
  }
}

/** One block of a table at `offset`/`size`, decompressed when its trailer says Snappy (type 1). */
function tableBlock(bytes: Buffer, offset: number, size: number): Buffer | null {
  if (offset + size + BLOCK_TRAILER_BYTES > bytes.length) return null;
  const body = bytes.subarray(offset, offset + size);
  const type = bytes[offset + size];
  return type === 1 ? snappy(body) : type === 0 ? body : null;
}

/** The entries of a block: [key, value] with keys' shared prefixes restored. */
function blockEntries(block: Buffer): [Buffer, Buffer][] {
  if (block.length < 4) return [];
  const restarts = block.readUInt32LE(block.length - 4);
  const end = block.length - 4 - 4 * restarts;
  const out: [Buffer, Buffer][] = [];
  let key = Buffer.alloc(0);
  let at = 0;
  while (at < end) {
    const shared = varint(block, at);
    const unshared = varint(block, shared.next);
    const valueLength = varint(block, unshared.next);
    const keyEnd = valueLength.next + unshared.value;
    key = Buffer.concat([key.subarray(0, shared.value), block.subarray(valueLength.next, keyEnd)]);
    out.push([key, block.subarray(keyEnd, keyEnd + valueLength.value)]);
    at = keyEnd + valueLength.value;
  }
  return out;
}

/** Every data block of a LevelDB table, decompressed (through its index block). */
export function tableBlocks(bytes: Buffer): Buffer[] {
  if (bytes.length < FOOTER_BYTES || !bytes.subarray(bytes.length - 8).equals(TABLE_MAGIC)) return [];
  const footer = bytes.subarray(bytes.length - FOOTER_BYTES);
  const metaOffset = varint(footer, 0);
  const metaSize = varint(footer, metaOffset.next);
  const indexOffset = varint(footer, metaSize.next);
  const indexSize = varint(footer, indexOffset.next);
  const index = tableBlock(bytes, indexOffset.value, indexSize.value);
  if (!index) throw new Error('unreadable index block');
  return blockEntries(index).map(([, handle]) => {
    const offset = varint(handle, 0);
    const size = varint(handle, offset.next);
    const block = tableBlock(bytes, offset.value, size.value);
    if (!block) throw new Error(`unreadable data block at ${offset.value}`);
    return block;
  });
}

/** The records of a LevelDB log, their fragments joined across its 32 KiB blocks. */
export function logRecords(bytes: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let parts: Buffer[] = [];
  for (let block = 0; block < bytes.length; block += LOG_BLOCK_BYTES) {
    let at = block;
    const end = Math.min(block + LOG_BLOCK_BYTES, bytes.length);
    while (at + LOG_HEADER_BYTES <= end) {
      const length = bytes.readUInt16LE(at + 4);
      const type = bytes[at + 6];
      if (type === 0 && length === 0) break; // zero padding: the rest of the block is empty
      parts.push(bytes.subarray(at + LOG_HEADER_BYTES, at + LOG_HEADER_BYTES + length));
      // 1 full, 4 last: the record is complete.
      if (type === 1 || type === 4) {
        records.push(Buffer.concat(parts));
        parts = [];
      }
      at += LOG_HEADER_BYTES + length;
    }
  }
  return records;
}

/** The values a log record (a LevelDB write batch) puts: 12-byte header, then put/delete ops. */
export function batchValues(record: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 12;
  try {
    while (at < record.length) {
      const op = record[at++];
      const key = varint(record, at);
      at = key.next + key.value;
      if (op === 0) continue; // a deletion carries no value
      if (op !== 1) break;
      const value = varint(record, at);
      out.push(record.subarray(value.next, value.next + value.value));
      at = value.next + value.value;
    }
  } catch {
    // A torn record at the end of the log: what was read stands.
  }
  return out;
}

/**
 * Snappy streams a value or a blob file may start with, a few bytes in (Chromium's value
 * envelope comes first): every offset whose stream decodes to its declared length.
 */
export function snappyStreams(bytes: Buffer, maxHeader = 16): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < Math.min(maxHeader, bytes.length); at++) {
    let declared: number;
    try {
      declared = varint(bytes, at).value;
    } catch {
      continue;
    }
    // Snappy output is never much shorter than its input (incompressible bytes cost a little
    // more), and no value here comes near a gigabyte.
    const input = bytes.length - at;
    if (declared + 64 + input / 100 < input || declared > 1 << 30) continue;
    const decoded = snappy(bytes.subarray(at));
    if (decoded && decoded.length === declared) out.push(decoded);
  }
  return out;
}

export interface StoredView {
  /** The file, and which view of it: `raw`, `table blocks`, `log records`, `snappy@…`. */
  readonly where: string;
  readonly bytes: Buffer;
}

/** Each file under `dir` as raw bytes, and as its LevelDB and Snappy layers decode. */
export function storedViews(dir: string): StoredView[] {
  const views: StoredView[] = [];
  for (const { file, bytes } of filesUnder(dir)) {
    views.push({ where: `${file} (raw)`, bytes });
    const base = path.basename(file);
    const values: Buffer[] = [];
    if (base.endsWith('.ldb')) {
      const blocks = tableBlocks(bytes);
      views.push({ where: `${file} (table blocks)`, bytes: Buffer.concat(blocks) });
      for (const block of blocks) values.push(...blockEntries(block).map(([, v]) => v));
    } else if (base.endsWith('.log') && fs.existsSync(path.join(dir, path.dirname(file), 'CURRENT'))) {
      const records = logRecords(bytes);
      views.push({ where: `${file} (log records)`, bytes: Buffer.concat(records) });
      for (const record of records) values.push(...batchValues(record));
    } else if (file.includes('.indexeddb.blob')) {
      values.push(bytes);
    }
    // Values compressed by Chromium itself: in a table entry, a log record, or a blob file.
    for (const value of values) {
      for (const decoded of snappyStreams(value)) views.push({ where: `${file} (snappy value)`, bytes: decoded });
    }
  }
  return views;
}
