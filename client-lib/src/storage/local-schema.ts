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
 */
export const MIGRATIONS: readonly string[] = [
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
];
