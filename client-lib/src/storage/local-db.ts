/**
 * The device database: PGlite behind a two-method interface. The storage backend follows the
 * `dataDir` prefix, as PGlite decides it: `memory://` (nothing kept), `idb://name`
 * (IndexedDB, browsers), or a directory path (Node).
 */
import { PGlite } from '@electric-sql/pglite';
import { MIGRATIONS } from './local-schema.ts';

/** Runs SQL; rows come back as plain objects (jsonb parsed, int8 as number). */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface LocalDb extends Queryable {
  /** One local transaction; PGlite serialises them, so nothing interleaves. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openLocalDb(dataDir: string): Promise<LocalDb> {
  const pg = await PGlite.create(dataDir);
  const wrap = (q: { query: PGlite['query'] }): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const res = await q.query<T>(sql, params as unknown[]);
      return res.rows;
    },
  });
  const db: LocalDb = {
    ...wrap(pg),
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    close: () => pg.close(),
  };
  await migrate(pg);
  return db;
}

async function migrate(pg: PGlite): Promise<void> {
  await pg.exec('create table if not exists local_schema_version (version integer not null)');
  const rows = (await pg.query<{ version: number }>('select version from local_schema_version')).rows;
  const current = rows[0]?.version ?? 0;
  for (let v = current; v < MIGRATIONS.length; v++) {
    await pg.transaction(async (tx) => {
      await tx.exec(MIGRATIONS[v] as string);
      await tx.query('delete from local_schema_version');
      await tx.query('insert into local_schema_version (version) values ($1)', [v + 1]);
    });
  }
}
