/**
 * Dictations on the device: the recording sealed under the device key in 256 KiB chunks (a long
 * recording is never one giant value, and an upload reads only the chunks it sends), and where
 * its upload stands. A row lives from the recording until the user's data is wiped; its chunks
 * only until the server has acknowledged `POST /ai/process-audio` for it.
 *
 * States: `on_device` (bytes here, the tus upload not finished), `uploaded` (the server holds
 * every byte; the run is not yet acknowledged), `on_server` (the run is acknowledged, the
 * chunks are deleted), `rejected` (the server refused it with a 4xx: bytes kept for the app
 * to retry or discard).
 */
import type { LocalDb, Queryable } from './local-db.ts';
import { dictationChunkAd } from './seal-ad.ts';

/** The size of a stored chunk. */
export const DICTATION_CHUNK_BYTES = 256 * 1024;

export type StoredDictationState = 'on_device' | 'uploaded' | 'on_server' | 'rejected';

export interface StoredDictation {
  readonly id: string;
  readonly schedule_uuid: string;
  readonly discipline: string;
  readonly encounter_type: string;
  readonly state: StoredDictationState;
  readonly bytes: number;
  readonly uploaded_bytes: number;
  readonly upload_url: string | null;
  readonly idempotency_key: string;
  readonly transcription_uuid: string | null;
  readonly attempts: number;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly created_at: string;
}

const COLUMNS = `id, schedule_uuid, discipline, encounter_type, state, bytes::float8 as bytes, uploaded_bytes::float8 as uploaded_bytes,
  upload_url, idempotency_key, transcription_uuid, attempts, error_code, error_message, created_at`;

/** Stores a recording and its chunks in one local transaction: all of it is on the device, or none. */
export async function addDictation(
  db: LocalDb,
  d: { id: string; schedule_uuid: string; discipline: string; encounter_type: string; idempotency_key: string; created_at: string },
  audio: Uint8Array,
): Promise<void> {
  await db.transaction(
    async (tx) => {
      await tx.query(
        `insert into dictations (id, schedule_uuid, discipline, encounter_type, state, bytes, idempotency_key, created_at)
         values ($1, $2, $3, $4, 'on_device', $5, $6, $7)`,
        [d.id, d.schedule_uuid, d.discipline, d.encounter_type, audio.length, d.idempotency_key, d.created_at],
      );
      for (let seq = 0; seq * DICTATION_CHUNK_BYTES < audio.length; seq++) {
        const part = audio.subarray(seq * DICTATION_CHUNK_BYTES, (seq + 1) * DICTATION_CHUNK_BYTES);
        await tx.query('insert into dictation_chunks (dictation_id, seq, sealed) values ($1, $2, $3)', [d.id, seq, await tx.cipher.seal(part, dictationChunkAd(d.id, seq))]);
      }
    },
    // Its id was made before: kept by the tab that closed, or stored now.
    { made: async (q) => ((await getDictation(q, d.id)) ? undefined : null) },
  );
}

/** Every dictation (of one visit, if given), oldest first. */
export async function listDictations(db: Queryable, scheduleUuid: string | null = null): Promise<StoredDictation[]> {
  return db.query<StoredDictation>(`select ${COLUMNS} from dictations where $1::text is null or schedule_uuid = $1 order by created_at, id`, [scheduleUuid]);
}

export async function getDictation(db: Queryable, id: string): Promise<StoredDictation | null> {
  const [row] = await db.query<StoredDictation>(`select ${COLUMNS} from dictations where id = $1`, [id]);
  return row ?? null;
}

/** The dictations the uploader still has work for, oldest first. */
export async function dictationsToSend(db: Queryable): Promise<StoredDictation[]> {
  return db.query<StoredDictation>(`select ${COLUMNS} from dictations where state in ('on_device', 'uploaded') order by created_at, id`);
}

/** Recordings whose audio exists only on this device (or is refused): unsynced work, like a queued write. */
export async function unsentDictationCount(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: number }>(`select count(*)::int as n from dictations where state in ('on_device', 'uploaded', 'rejected')`);
  return row?.n ?? 0;
}

/** Bytes `start` (inclusive) to `end` (exclusive) of the recording, opened from the chunks that hold them. */
export async function readDictationRange(db: Queryable, id: string, start: number, end: number): Promise<Uint8Array> {
  if (end <= start) return new Uint8Array(0);
  const first = Math.floor(start / DICTATION_CHUNK_BYTES);
  const last = Math.floor((end - 1) / DICTATION_CHUNK_BYTES);
  const rows = await db.query<{ seq: number; sealed: Uint8Array }>('select seq, sealed from dictation_chunks where dictation_id = $1 and seq between $2 and $3 order by seq', [id, first, last]);
  if (rows.length !== last - first + 1) throw new Error('the dictation\u2019s audio is no longer on this device');
  const out = new Uint8Array(end - start);
  for (const r of rows) {
    const plain = await db.cipher.open(r.sealed, dictationChunkAd(id, r.seq));
    const chunkStart = r.seq * DICTATION_CHUNK_BYTES;
    const from = Math.max(start, chunkStart);
    const to = Math.min(end, chunkStart + plain.length);
    out.set(plain.subarray(from - chunkStart, to - chunkStart), from - start);
  }
  return out;
}

/** The tus upload this recording goes to (null: start a new one). Resetting the URL resets the count. */
export async function setUploadUrl(db: Queryable, id: string, url: string | null): Promise<void> {
  await db.query(`update dictations set upload_url = $2, uploaded_bytes = case when $2::text is null then 0 else uploaded_bytes end where id = $1`, [id, url]);
}

/** The bytes the server has confirmed (tus `Upload-Offset`). */
export async function setUploadedBytes(db: Queryable, id: string, n: number): Promise<void> {
  await db.query(`update dictations set uploaded_bytes = greatest(uploaded_bytes, $2) where id = $1 and state = 'on_device'`, [id, n]);
}

export async function markUploaded(db: Queryable, id: string): Promise<void> {
  await db.query(`update dictations set state = 'uploaded', uploaded_bytes = bytes, error_code = null, error_message = null where id = $1 and state = 'on_device'`, [id]);
}

/** The server acknowledged the run: its id is kept, and the audio leaves the device in the same transaction. */
export async function markOnServer(db: LocalDb, id: string, transcriptionUuid: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(`update dictations set state = 'on_server', transcription_uuid = $2, error_code = null, error_message = null where id = $1`, [id, transcriptionUuid]);
    await tx.query('delete from dictation_chunks where dictation_id = $1', [id]);
  });
}

export async function markRejected(db: Queryable, id: string, code: string, message: string): Promise<void> {
  await db.query(`update dictations set state = 'rejected', error_code = $2, error_message = $3 where id = $1 and state in ('on_device', 'uploaded')`, [id, code, message]);
}

/** A transient failure: counted, the last one kept; the uploader tries again later. */
export async function recordDictationAttempt(db: Queryable, id: string, code: string, message: string): Promise<void> {
  await db.query('update dictations set attempts = attempts + 1, error_code = $2, error_message = $3 where id = $1', [id, code, message]);
}

/**
 * Rejected recordings go back to the queue; the upload starts over (the server kept nothing
 * usable). Answers how many. Across a change of the leading tab it was made if none of them is
 * still rejected in the next leader's database (the uploader may have taken them on since).
 */
export async function requeueDictations(db: LocalDb, ids: readonly string[] | null): Promise<number> {
  const rows = await db.query<{ id: string }>(`select id from dictations where state = 'rejected' and ($1::text[] is null or id = any($1::text[]))`, [ids]);
  const rejected = rows.map((r) => r.id);
  if (rejected.length === 0) return 0;
  return db.transaction(
    async (tx) => {
      const back = await tx.query<{ id: string }>(
        `update dictations set state = 'on_device', upload_url = null, uploaded_bytes = 0, attempts = 0, error_code = null, error_message = null
         where state = 'rejected' and id = any($1::text[]) returning id`,
        [rejected],
      );
      return back.length;
    },
    { made: async (q) => ((await q.query(`select 1 from dictations where state = 'rejected' and id = any($1::text[]) limit 1`, [rejected])).length === 0 ? rejected.length : null) },
  );
}

/** Drops rejected recordings (their audio with them). Dropped twice it does no harm: made again across a change of the leading tab. */
export async function discardDictations(db: LocalDb, ids: readonly string[] | null): Promise<void> {
  await db.transaction(
    async (tx) => {
      const gone = await tx.query<{ id: string }>(`delete from dictations where state = 'rejected' and ($1::text[] is null or id = any($1::text[])) returning id`, [ids]);
      if (gone.length > 0) await tx.query('delete from dictation_chunks where dictation_id = any($1::text[])', [gone.map((g) => g.id)]);
    },
    { repeatable: true },
  );
}

/** Part of wiping the user's data (sign-out, another user, a revoked device). */
export async function clearDictations(tx: Queryable): Promise<void> {
  await tx.query('delete from dictation_chunks');
  await tx.query('delete from dictations');
}
