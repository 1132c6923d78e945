import { AsyncLocalStorage } from 'node:async_hooks';
import type { Db } from './database.ts';

/**
 * Lets a caller run several service calls in one database transaction without threading the
 * transaction through every service. Services are built with `db` (a proxy): inside
 * `transaction(fn)` every use of it — including the services' own `db.transaction(...)`,
 * which become savepoints — runs on the ambient transaction; outside, on the pool. The sync
 * channel uses it to apply a batch of mutations and advance the device's last mutation id
 * atomically.
 */
export type TransactionConfig = Parameters<Db['transaction']>[1];

export interface UnitOfWork {
  /** The ambient transaction, or the pool outside one. */
  readonly db: Db;
  /**
   * Writes that must outlive the rollback of the work they describe (a failure's audit
   * entry): run now on the pool outside a unit of work; inside `savepoint`, after it ended
   * (rolled back or not), on the enclosing transaction.
   */
  durably(write: (db: Db) => Promise<void>): Promise<void>;
  transaction<T>(fn: (tx: Db) => Promise<T>, config?: TransactionConfig): Promise<T>;
  /**
   * Runs `fn` in a savepoint of the ambient transaction that the first transaction `fn`
   * opens through `db` reuses instead of nesting another: one atomic unit, two round trips
   * fewer. An error rolls the savepoint back and is rethrown.
   */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs a request whose outcome must commit with its writes (an Idempotency-Key's stored
   * answer). The first transaction `fn` opens is not committed when its callback returns: it
   * stays open, everything `fn` does afterwards through `db` runs inside it (later
   * transactions become savepoints), and it commits when `fn` returns, or rolls back when `fn`
   * throws. Reads before the first transaction stay on the pool. `durably` writes made while
   * it is open run after it ends, so a rolled-back request keeps its failure's audit entry.
   * `eager` opens the transaction before `fn` runs, for work whose writes are single
   * statements outside any transaction of their own.
   */
  request<T>(fn: () => Promise<T>, options?: { eager?: boolean }): Promise<T>;
  /**
   * Inside `request`: `undo` runs if the request's transaction rolls back after all (an object
   * written beside a row that is not kept). Outside one it is never called: the caller's own
   * transaction ends before it returns, and its error reaches the caller.
   */
  onRollback(undo: () => Promise<void>): void;
}

interface Ambient {
  readonly tx: Db;
  /** A savepoint that the next `db.transaction` may use as its own. */
  reusable: boolean;
  /** The nearest `savepoint`'s writes to run once it has ended. */
  readonly deferred: Array<(db: Db) => Promise<void>> | null;
}

/** A `request(fn)` in progress: its transaction once `fn` has opened one. */
interface RequestScope {
  tx: Db | null;
  /** Ends the open transaction: commits with `null`, rolls back with the error. */
  end: ((err: unknown) => Promise<void>) | null;
  ended: boolean;
  readonly afterwards: Array<(db: Db) => Promise<void>>;
  readonly undo: Array<() => Promise<void>>;
}

/** Thrown inside the parked transaction to roll it back without a second error. */
class RequestRolledBack extends Error {}

export function createUnitOfWork(base: Db): UnitOfWork {
  const ambient = new AsyncLocalStorage<Ambient>();
  const requests = new AsyncLocalStorage<RequestScope>();
  const openRequest = (): RequestScope | undefined => {
    const scope = requests.getStore();
    return scope && !scope.ended ? scope : undefined;
  };
  /** The enclosing transaction: the ambient one, else the request's once it is open. */
  const enclosing = (): Ambient | undefined => {
    const store = ambient.getStore();
    if (store) return store;
    const tx = openRequest()?.tx;
    return tx ? { tx, reusable: false, deferred: null } : undefined;
  };
  const current = (): Db => enclosing()?.tx ?? base;

  // The request's transaction: `fn` runs in it and its result is handed back at once, while
  // the transaction itself waits for `end` (the request's outcome) before committing.
  const openRequestTransaction = <T>(scope: RequestScope, fn: (tx: Db) => Promise<T>, config: TransactionConfig | undefined): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let verdict: (err: unknown) => void = () => {};
      const decided = new Promise<unknown>((r) => (verdict = r));
      let started = false;
      let firstFailed = false;
      const done = base
        .transaction(async (tx) => {
          started = true;
          scope.tx = tx as Db;
          let result: T;
          try {
            result = await ambient.run({ tx: tx as Db, reusable: false, deferred: null }, () => fn(tx as Db));
          } catch (err) {
            firstFailed = true;
            scope.tx = null;
            scope.end = null;
            reject(err);
            throw err;
          }
          resolve(result);
          const err = await decided;
          if (err !== null) throw new RequestRolledBack();
        }, config)
        .catch((err: unknown) => {
          if (firstFailed || err instanceof RequestRolledBack) return;
          if (!started) {
            // BEGIN itself failed (the database is away): the caller gets the error.
            scope.end = null;
            reject(err);
            return;
          }
          throw err;
        });
      // The connection may die while the transaction waits for the request's outcome (the
      // database restarting): that rejection is the request's to see at `end`, not an
      // unhandled one in between.
      done.catch(() => {});
      scope.end = async (err) => {
        scope.end = null;
        verdict(err);
        await done;
        scope.tx = null;
      };
    });

  const run = <T>(
    parent: Ambient | undefined,
    fn: (tx: Db) => Promise<T>,
    config: TransactionConfig | undefined,
    own: { reusable: boolean; deferred: Ambient['deferred'] },
  ): Promise<T> => {
    const inner = (tx: Db) =>
      ambient.run({ tx, reusable: own.reusable, deferred: own.deferred ?? parent?.deferred ?? null }, () => fn(tx));
    if (parent) return parent.tx.transaction((tx) => inner(tx as Db), config);
    const scope = openRequest();
    if (scope && !scope.tx) return openRequestTransaction(scope, inner, config);
    return base.transaction((tx) => inner(tx as Db), config);
  };
  const transaction = <T>(fn: (tx: Db) => Promise<T>, config?: TransactionConfig): Promise<T> => {
    const store = ambient.getStore();
    if (store?.reusable) {
      store.reusable = false;
      return fn(store.tx);
    }
    return run(enclosing(), fn, config, { reusable: false, deferred: null });
  };
  const proxyOf = (resolve: () => Db): Db =>
    new Proxy(base, {
      get(_target, prop) {
        if (prop === 'transaction') return transaction;
        const target = resolve();
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  /** A write that must outlive what encloses it, once that has ended. */
  const afterwards = async (parent: Ambient | undefined, write: (db: Db) => Promise<void>): Promise<void> => {
    if (parent) return write(parent.tx);
    const scope = openRequest();
    if (scope?.tx) scope.afterwards.push(write);
    else await write(base);
  };
  return {
    db: proxyOf(current),
    transaction,
    async savepoint(fn) {
      const parent = enclosing();
      const deferred: Array<(db: Db) => Promise<void>> = [];
      try {
        return await run(parent, () => fn(), undefined, { reusable: true, deferred });
      } finally {
        // A request's transaction may have opened inside `fn`: its deferred writes wait for it.
        for (const write of deferred) await afterwards(parent, write);
      }
    },
    onRollback(u) {
      openRequest()?.undo.push(u);
    },
    async durably(write) {
      const deferred = ambient.getStore()?.deferred;
      if (deferred) deferred.push(write);
      else await afterwards(enclosing(), write);
    },
    async request(fn, options = {}) {
      const scope: RequestScope = { tx: null, end: null, ended: false, afterwards: [], undo: [] };
      const undo = async () => {
        for (const u of scope.undo.splice(0)) await u().catch(() => {});
      };
      try {
        let result: Awaited<ReturnType<typeof fn>>;
        try {
          result = await requests.run(scope, async () => {
            if (options.eager) await openRequestTransaction(scope, async () => undefined, undefined);
            return fn();
          });
        } catch (err) {
          await scope.end?.(err).catch(() => {});
          await undo();
          throw err;
        }
        try {
          await scope.end?.(null);
        } catch (err) {
          await undo();
          throw err;
        }
        return result;
      } finally {
        scope.ended = true;
        for (const write of scope.afterwards.splice(0)) await write(base);
      }
    },
  };
}
