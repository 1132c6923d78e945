import fs from 'node:fs/promises';
import type { PGlite } from '@electric-sql/pglite';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from '@fieldchart/schema/db';
import { withinMs } from './reachability.ts';
import { PgliteThread, type EmbeddedPglite } from './pglite-thread-client.ts';

export type { EmbeddedPglite } from './pglite-thread-client.ts';

export type Schema = typeof schema;

/**
 * The one database type that both drivers satisfy. Transactions are the same type, so a
 * data-access function takes `Db` and works inside or outside a transaction.
 */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export type DatabaseTarget =
  | {
      readonly kind: 'pglite';
      readonly dataDir: string;
      /** A data dir archive (PGlite's `dumpDataDir`) to start from; bytes skip Node 20's slow Blob reads. */
      readonly loadDataDir?: Blob | Uint8Array;
      /**
       * PostgreSQL's `shared_buffers`; PGlite's own 128 MB where absent (the server). PGlite
       * zeroes them at every start, so a one-shot open (a CLI command) asks for less.
       */
      readonly sharedBuffers?: string;
    }
  | { readonly kind: 'postgres'; readonly url: string; readonly poolSize?: number };

export interface Database {
  readonly kind: 'pglite' | 'postgres';
  readonly db: Db;
  /**
   * Present on the embedded database: PGlite on its own thread (db/pglite-thread-client.ts),
   * through which the job queue, notifications, backups and tests reach it.
   */
  readonly pglite: EmbeddedPglite | null;
  /** Present on PostgreSQL: LISTEN/NOTIFY and admin statements. */
  readonly sql: postgres.Sql | null;
  /**
   * For a statement prepared to be planned once and run for every value (the feed's diff, on
   * every poke): on PostgreSQL a pool of its own whose sessions keep each statement's one
   * generic plan (`plan_cache_mode = force_generic_plan`). By default PostgreSQL plans a
   * prepared statement again for its values whenever its generic plan looks dearer, and for a
   * clinician with a history the diff's did: every poke was planned again, 1.2–1.7 ms. Other
   * statements stay on `db`, planned as PostgreSQL chooses. The embedded database: `db`.
   */
  readonly planned: Db;
  /** Resolves when the database answers; on PostgreSQL rejects within PING_TIMEOUT_MS when it does not. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** How long a readiness ping waits for PostgreSQL before it calls the database away. */
export const PING_TIMEOUT_MS = 3000;

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if (target.kind === 'pglite') {
    if (!target.dataDir.startsWith('memory://')) await fs.mkdir(target.dataDir, { recursive: true });
    // Off the event loop: PGlite runs each statement synchronously (issue 15).
    const { kind: _pglite, ...where } = target;
    const pglite = await PgliteThread.create(where);
    const db = drizzlePglite({ client: pglite as unknown as PGlite, schema }) as unknown as Db;
    return {
      kind: 'pglite',
      db,
      pglite,
      sql: null,
      planned: db,
      async ping() {
        await pglite.query('select 1');
      },
      async close() {
        if (!pglite.closed) await pglite.close();
      },
    };
  }
  // postgres.js's own backoff grows to 20 s after repeated failures and only then tries a
  // lost connection again, so a database back after a restart would sit unused that long:
  // capped at 1 s, the server is serving again within a second of PostgreSQL.
  const backoff = (retries: number) => (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, 1);
  const poolSize = target.poolSize ?? 10;
  const sql = postgres(target.url, { max: poolSize, onnotice: () => {}, connection: { application_name: 'fieldchart' }, backoff });
  // Connected on first use, like the main pool; a quarter of its size (the diff is one short statement).
  const plannedSql = postgres(target.url, {
    max: Math.max(2, Math.ceil(poolSize / 4)),
    onnotice: () => {},
    connection: { application_name: 'fieldchart-feed', plan_cache_mode: 'force_generic_plan' },
    backoff,
  });
  const db = drizzlePostgres({ client: sql, schema }) as unknown as Db;
  return {
    kind: 'postgres',
    db,
    pglite: null,
    sql,
    planned: drizzlePostgres({ client: plannedSql, schema }) as unknown as Db,
    // Through the application's own pool (readiness means this pool can serve), bounded: a
    // pool that cannot connect would otherwise keep the query waiting until it can.
    ping: () => withinMs(sql`select 1`.then(() => undefined), PING_TIMEOUT_MS),
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), plannedSql.end({ timeout: 5 })]);
    },
  };
}

/** drizzle's `execute` answers `{rows}` on PGlite and an array on postgres.js. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** A unique-constraint violation from either driver (drizzle may wrap it in `cause`). */
/**
 * The SQLSTATE of a database error, looking through drizzle's wrapping (`cause`), or null.
 * Only five-character codes count: Fastify's and Node's own codes look different.
 */
export function sqlState(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return null;
}

export function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === '23505') return true;
  }
  return false;
}
