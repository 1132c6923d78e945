/**
 * Tabs sharing the device database (shared-db.ts): when the tab whose worker holds it closes,
 * a call that worker had taken fails with PGlite's `LeaderChangedError` (patches/README.md).
 * A read is simply made again, and waits for the next leader. A write may or may not have
 * been made — its commit reaches IndexedDB only once that worker wrote it out — so it is made
 * again only once the next leader's database says it is not there.
 */
import { LeaderChangedError } from '@electric-sql/pglite/worker';

/**
 * How often a call is made when the database's leading tab changes under it. One hand-over can
 * reject a call twice: PGlite's tab handle dispatches its leader change for the new leader's
 * `leader-here` and, in the new leader's own tab, again for `leader-now`, in either order. The
 * third try waits for the new leader; the fourth is for a second hand-over close behind.
 * (Two tries: three readers in one tab failed once in each of three runs of browser-tabs.test.ts.)
 */
export const ATTEMPTS = 4;

/** Makes a read again after a leader change. */
export async function readAcrossLeaders<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof LeaderChangedError) || tries >= ATTEMPTS) throw err;
    }
  }
}

/**
 * Runs `run` (a transaction); after a leader change, asks `made` and makes it again if it was
 * not there. Rejects only when it was not made (or the next leader cannot be asked). `made`'s
 * reads retry across leaders themselves (local-db.ts: every read outside a transaction does).
 */
export async function writeAcrossLeaders<T>(run: () => Promise<T>, made: (() => Promise<T | null>) | undefined): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await run();
    } catch (err) {
      if (!made || !(err instanceof LeaderChangedError)) throw err;
      const found = await made();
      if (found !== null) return found;
      if (tries >= ATTEMPTS) throw err;
    }
  }
}
