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
}

interface Ambient {
  readonly tx: Db;
  /** A savepoint that the next `db.transaction` may use as its own. */
  reusable: boolean;
  /** The nearest `savepoint`'s writes to run once it has ended. */
  readonly deferred: Array<(db: Db) => Promise<void>> | null;
}

export function createUnitOfWork(base: Db): UnitOfWork {
  const ambient = new AsyncLocalStorage<Ambient>();
  const current = (): Db => ambient.getStore()?.tx ?? base;
  const run = <T>(
    parent: Ambient | undefined,
    fn: (tx: Db) => Promise<T>,
    config: TransactionConfig | undefined,
    own: { reusable: boolean; deferred: Ambient['deferred'] },
  ): Promise<T> =>
    (parent?.tx ?? base).transaction(
      (tx) => ambient.run({ tx: tx as Db, reusable: own.reusable, deferred: own.deferred ?? parent?.deferred ?? null }, () => fn(tx as Db)),
      config,
    );
  const transaction = <T>(fn: (tx: Db) => Promise<T>, config?: TransactionConfig): Promise<T> => {
    const store = ambient.getStore();
    if (store?.reusable) {
      store.reusable = false;
      return fn(store.tx);
    }
    return run(store, fn, config, { reusable: false, deferred: null });
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
  return {
    db: proxyOf(current),
    transaction,
    async savepoint(fn) {
      const parent = ambient.getStore();
      const deferred: Array<(db: Db) => Promise<void>> = [];
      try {
        return await run(parent, () => fn(), undefined, { reusable: true, deferred });
      } finally {
        for (const write of deferred) await write(parent?.tx ?? base);
      }
    },
    async durably(write) {
      const deferred = ambient.getStore()?.deferred;
      if (deferred) deferred.push(write);
      else await write(current());
    },
  };
}
