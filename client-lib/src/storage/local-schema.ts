import type { RowCipher } from './row-cipher.ts';
import { sealJson } from './row-cipher.ts';
import { draftUpdateAd, failureAd, feedRowAd, metaAd, outboxAd, outboxResultAd, rejectionAd } from './seal-ad.ts';

/** What a migration written in code gets: its transaction, and the cipher of the device key. */
export interface MigrationTx {
  exec(sql: string): Promise<void>;
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  readonly cipher: RowCipher;
}

/** SQL run in one transaction; code run in one transaction; or statements that cannot run in one. */
export type LocalMigration =
  | string
  | { readonly run: (tx: MigrationTx) => Promise<void> }
  /** `scrubsOldValues`: it only removes what earlier versions wrote, so a new database skips it. */
  | { readonly outsideTransaction: readonly string[]; readonly scrubsOldValues?: boolean };

/**
 * The device database, in order of creation. Append a migration; never edit one that shipped:
 * devices carry their databases across app updates.
 *
 * - `feed_rows`: the server's rows as the change feed sent them, one table for every feed
 *   table (the row is kept whole as JSON; the columns beside it are the keys reads filter on).
 * - `feed_staging`: the batches of a feed unit not yet closed by a checkpoint. A unit is
 *   applied to `feed_rows` all at once, so reads never see half a unit.
 * - `outbox`: every local write, in order. `pending` entries wait for the server; `acked`
 *   ones stay (as the optimistic overlay) until the feed has brought the server's rows.
 * - `rejections`: what the server refused, for the app to show.
 * - `failures`: writes the server parked after repeated unexpected errors (answer `failed`):
 *   out of the queue (it moves on), kept with their arguments until the app retries
 *   (a new mutation id at the end of the queue) or dismisses them.
 * - `visit_receipts`: when the server last acknowledged a write about a visit.
 * - `draft_updates` / `drafts`: the Yjs updates of each SOAP draft, and how far the server
 *   is known to have them.
 * - `meta`: small values (client id, mutation counter, cursor, session, window).
 * - `dictations` / `dictation_chunks`: recordings waiting to reach the server (tus upload, then
 *   `POST /ai/process-audio`), the audio sealed in 256 KiB chunks; the chunks go once the
 *   server has acknowledged the run.
 *
 * From migration 3 on, every value that holds PHI (or the session's tokens) is sealed
 * (AES-256-GCM, row-cipher.ts) in a `sealed` bytea column; the columns left clear are the keys
 * reads filter on (ids, dates, table names, states, counters). Migration 3 seals what an older
 * device holds; migration 4 makes their clear copies leave the files (dead rows, WAL).
 */
export const MIGRATIONS: readonly LocalMigration[] = [
  `
  create table meta (key text primary key, value jsonb not null);

  create table feed_rows (
    tbl text not null,
    id text not null,
    version bigint not null,
    row jsonb not null,
    schedule_uuid text,
    visit_date text,
    patient_uuid text,
    primary key (tbl, id)
  );
  create index feed_rows_schedule on feed_rows (tbl, schedule_uuid);
  create index feed_rows_date on feed_rows (tbl, visit_date);
  create index feed_rows_patient on feed_rows (tbl, patient_uuid);

  create table feed_staging (seq bigserial primary key, kind text not null, change jsonb);

  create table outbox (
    mutation_id bigint primary key,
    name text not null,
    args jsonb not null,
    local jsonb not null default '{}',
    client_time text not null,
    schedule_uuid text,
    state text not null default 'pending' check (state in ('pending', 'acked')),
    result jsonb,
    acked_at text,
    settle_after_synced bigint,
    attempts integer not null default 0,
    last_error text
  );
  create index outbox_state on outbox (state, mutation_id);
  create index outbox_visit on outbox (schedule_uuid);

  create table rejections (
    mutation_id bigint primary key,
    name text not null,
    args jsonb not null,
    schedule_uuid text,
    status integer not null,
    code text not null,
    message text not null,
    errors jsonb,
    rejected_at text not null
  );

  create table visit_receipts (schedule_uuid text primary key, last_acked_mutation_id bigint not null, acked_at text not null);

  create table drafts (doc text primary key, local_seq bigint not null default 0, confirmed_seq bigint not null default 0);
  create table draft_updates (id bigserial primary key, doc text not null, "update" bytea not null);
  create index draft_updates_doc on draft_updates (doc, id);
  `,
  `
  create table failures (
    mutation_id bigint primary key,
    name text not null,
    args jsonb not null,
    local jsonb not null default '{}',
    client_time text not null,
    schedule_uuid text,
    code text not null,
    message text not null,
    attempts integer not null,
    failed_at text not null
  );
  `,
  { run: sealPhi },
  // The clear values also sit in dead rows and in the WAL that carried them. The tables are
  // rewritten (their old files unlinked); the WAL moves on to new segments twice, and the
  // checkpoints remove the old ones — unlinked, not recycled: a recycled segment is renamed
  // with its old bytes in it.
  {
    scrubsOldValues: true,
    outsideTransaction: [
      'vacuum full meta, feed_rows, feed_staging, outbox, rejections, failures, draft_updates',
      'set wal_recycle = off',
      'select pg_switch_wal()',
      'checkpoint',
      'select pg_switch_wal()',
      'checkpoint',
      'reset wal_recycle',
    ],
  },
  // Dictations recorded on the device (dictation-store.ts): the recording sealed in chunks, so
  // a long one is never one giant value, and the tus upload's place beside it (clear: an
  // upload URL, byte counts and states are not PHI). Safe to run again (`if not exists`): the
  // first-screen test re-runs the latest migration to see an upgrade at open.
  `
  create table if not exists dictations (
    id text primary key,
    schedule_uuid text not null,
    discipline text not null,
    encounter_type text not null,
    state text not null check (state in ('on_device', 'uploaded', 'on_server', 'rejected')),
    bytes bigint not null,
    uploaded_bytes bigint not null default 0,
    upload_url text,
    idempotency_key text not null,
    transcription_uuid text,
    attempts integer not null default 0,
    error_code text,
    error_message text,
    created_at text not null
  );
  create index if not exists dictations_visit on dictations (schedule_uuid, created_at);
  create table if not exists dictation_chunks (dictation_id text not null, seq integer not null, sealed bytea not null, primary key (dictation_id, seq));
  `,
];

/** Migration 3: every PHI value into a sealed column, the clear column dropped. */
async function sealPhi(tx: MigrationTx): Promise<void> {
  const c = tx.cipher;
  type Row = Record<string, unknown>;
  const each = async (select: string, fn: (r: Row) => Promise<void>) => {
    for (const r of await tx.query<Row>(select)) await fn(r);
  };
  const str = (v: unknown) => v as string;
  const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

  // meta: the session (access and refresh tokens, the user's email) and a refresh in progress.
  await tx.exec('alter table meta add column sealed bytea; alter table meta alter column value drop not null');
  await each(`select key, value from meta where key in ('session', 'refresh_attempt')`, async (r) => {
    await tx.query('update meta set value = null, sealed = $2 where key = $1', [r.key, await sealJson(c, r.value, metaAd(str(r.key)))]);
  });

  await tx.exec('alter table feed_rows add column sealed bytea');
  await each('select tbl, id, row from feed_rows', async (r) => {
    await tx.query('update feed_rows set sealed = $3 where tbl = $1 and id = $2', [r.tbl, r.id, await sealJson(c, r.row, feedRowAd(str(r.tbl), str(r.id)))]);
  });
  await tx.exec('alter table feed_rows drop column row; alter table feed_rows alter column sealed set not null');

  // A staged unit is not yet applied and its cursor not stored: the server sends it again.
  await tx.exec('delete from feed_staging; alter table feed_staging drop column change; alter table feed_staging add column sealed bytea');

  await tx.exec('alter table outbox add column sealed bytea; alter table outbox add column sealed_result bytea');
  await each('select mutation_id, name, args, local, result, client_time, schedule_uuid from outbox', async (r) => {
    const place = { name: str(r.name), client_time: str(r.client_time), schedule_uuid: strOrNull(r.schedule_uuid) };
    await tx.query('update outbox set sealed = $2, sealed_result = $3 where mutation_id = $1', [
      r.mutation_id,
      await sealJson(c, { args: r.args, local: r.local }, outboxAd(place)),
      r.result === null || r.result === undefined ? null : await sealJson(c, r.result, outboxResultAd(place)),
    ]);
  });
  await tx.exec('alter table outbox drop column args, drop column local, drop column result; alter table outbox alter column sealed set not null');

  await tx.exec('alter table rejections add column sealed bytea');
  await each('select mutation_id, args, message, errors from rejections', async (r) => {
    const sealed = await sealJson(c, { args: r.args, message: r.message, errors: r.errors }, rejectionAd(Number(r.mutation_id)));
    await tx.query('update rejections set sealed = $2 where mutation_id = $1', [r.mutation_id, sealed]);
  });
  await tx.exec('alter table rejections drop column args, drop column message, drop column errors; alter table rejections alter column sealed set not null');

  await tx.exec('alter table failures add column sealed bytea');
  await each('select mutation_id, args, local, message from failures', async (r) => {
    const sealed = await sealJson(c, { args: r.args, local: r.local, message: r.message }, failureAd(Number(r.mutation_id)));
    await tx.query('update failures set sealed = $2 where mutation_id = $1', [r.mutation_id, sealed]);
  });
  await tx.exec('alter table failures drop column args, drop column local, drop column message; alter table failures alter column sealed set not null');

  await tx.exec('alter table draft_updates add column sealed bytea');
  await each('select id, doc, "update" from draft_updates', async (r) => {
    const sealed = await c.seal(r.update as Uint8Array, draftUpdateAd(str(r.doc), Number(r.id)));
    await tx.query('update draft_updates set sealed = $2 where id = $1', [r.id, sealed]);
  });
  await tx.exec('alter table draft_updates drop column "update"; alter table draft_updates alter column sealed set not null');
}
