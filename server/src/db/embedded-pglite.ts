import type { PGlite } from '@electric-sql/pglite';

/** What the project uses of PGlite: PGlite itself satisfies it, and so does the thread client (pglite-thread-client.ts). */
export type EmbeddedPglite = Pick<PGlite, 'query' | 'exec' | 'transaction' | 'listen' | 'unlisten' | 'dumpDataDir' | 'close' | 'closed' | 'parsers'>;
