/**
 * A bench's measurement on a fresh migrated database of each backend the tests know
 * (test/helpers/backends.ts): PGlite always, PostgreSQL too when BENCH_DATABASE_URL names a
 * server where a throwaway database may be created.
 */
import type { Database } from '../../server/src/db/database.ts';

export async function onEachBackend<R>(measure: (backend: string, database: Database) => Promise<R>): Promise<R[]> {
  // backends.ts decides at import which backends exist, from TEST_DATABASE_URL.
  if (process.env.BENCH_DATABASE_URL) process.env.TEST_DATABASE_URL = process.env.BENCH_DATABASE_URL;
  const { backends } = await import('../../test/helpers/backends.ts');
  const results: R[] = [];
  for (const backend of backends) {
    const opened = await backend.open();
    try {
      results.push(await measure(backend.name, opened.database));
    } finally {
      await opened.drop();
    }
  }
  return results;
}
