import { AsyncLocalStorage } from 'node:async_hooks';
import type { Db } from './database.ts';

/**
 * Lets a caller run several service calls in one database transaction without threading the
 * transaction through every service. Services are built with `db` (a proxy): inside
 * `transaction(fn)` every use of it — including the services' own `db.transaction(...)`,
 * which become savepoints — runs on the ambient transaction; outside, on the pool. The sync
 * channel uses it to apply a mutation and advance the device's last mutation id atomically.
 */
export type TransactionConfig = Parameters<Db['transaction']>[1];

export interface UnitOfWork {
  readonly db: Db;
  transaction<T>(fn: (tx: Db) => Promise<T>, config?: TransactionConfig): Promise<T>;
}

export function createUnitOfWork(base: Db): UnitOfWork {
  const ambient = new AsyncLocalStorage<Db>();
  const current = (): Db => ambient.getStore() ?? base;
  const db = new Proxy(base, {
    get(_target, prop) {
      const target = current();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    db,
    transaction: (fn, config) => current().transaction((tx) => ambient.run(tx as Db, () => fn(tx as Db)), config),
  };
}
