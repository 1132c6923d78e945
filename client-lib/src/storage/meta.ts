/**
 * Small named values of the device database (`meta` table). The session's (tokens that read
 * PHI, the user's email) are sealed with the device key; the rest are ids, counters, dates and
 * the feed's cursor, kept clear.
 */
import type { Queryable } from './local-db.ts';
import { openJson, sealJson } from './row-cipher.ts';
import { metaAd } from './seal-ad.ts';

/** The keys, and what each holds. */
export interface MetaValues {
  /** UUID generated once per install: names this device's mutation stream. */
  client_id: string;
  /** The next mutation id to hand out; never goes backwards, not even on sign-out. */
  next_mutation_id: number;
  /** The signed-in session (tokens survive restarts). */
  session: StoredSession;
  /** The user whose data the local tables hold. */
  user_id: string;
  /** The last feed checkpoint stored; absent before the first complete sync. */
  cursor: string;
  /** The visit dates in scope, from the last `welcome`. */
  window: { from: string; to: string };
  /** When the device was last current (server time of the last `synced`). */
  last_synced_at: string;
  /**
   * The refresh in progress: its Idempotency-Key, kept until its answer is stored. The server
   * rotates the refresh token on first use; if the answer is lost (network cut, app killed),
   * the retry with the same key gets that answer again instead of looking like token reuse,
   * which would revoke the session with writes still in the outbox.
   */
  refresh_attempt: { refresh_token: string; key: string };
}

export interface StoredSession {
  readonly token: string;
  readonly refresh_token: string;
  /** Device time the access token expires, ms since the epoch (from `expires_in`). */
  readonly expires_at: number;
  readonly user_id: string | null;
  readonly email: string | null;
}

/** The keys whose values are sealed. */
const SEALED: ReadonlySet<keyof MetaValues> = new Set<keyof MetaValues>(['session', 'refresh_attempt']);

export async function getMeta<K extends keyof MetaValues>(q: Queryable, key: K): Promise<MetaValues[K] | null> {
  const rows = await q.query<{ value: MetaValues[K] | null; sealed: Uint8Array | null }>('select value, sealed from meta where key = $1', [key]);
  const row = rows[0];
  if (!row) return null;
  if (row.sealed) return openJson<MetaValues[K]>(q.cipher, row.sealed, metaAd(key));
  return row.value ?? null;
}

export async function setMeta<K extends keyof MetaValues>(q: Queryable, key: K, value: MetaValues[K]): Promise<void> {
  const sealed = SEALED.has(key);
  await q.query(
    'insert into meta (key, value, sealed) values ($1, $2::jsonb, $3) on conflict (key) do update set value = excluded.value, sealed = excluded.sealed',
    [key, sealed ? null : JSON.stringify(value), sealed ? await sealJson(q.cipher, value, metaAd(key)) : null],
  );
}

export async function deleteMeta(q: Queryable, ...keys: (keyof MetaValues)[]): Promise<void> {
  await q.query('delete from meta where key = any($1::text[])', [keys]);
}

/** The install's client id, created on first use. */
export async function clientIdOf(q: Queryable): Promise<string> {
  const existing = await getMeta(q, 'client_id');
  if (existing) return existing;
  const id = globalThis.crypto.randomUUID();
  await setMeta(q, 'client_id', id);
  return id;
}
