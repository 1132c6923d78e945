/**
 * A set of writes decided in memory before any of them runs: what each input answers, the
 * audit entry each would have recorded, and the statements that make it so (one per table).
 * Services that offer one also apply the same input one at a time with the same rules; a plan
 * is only made when every input would succeed, so the two ways give the same rows and answers.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import type { AuditEntry } from './audit/audit-log.ts';

export interface BatchPlan<R> {
  /** Per input, in input order. */
  readonly results: readonly R[];
  /** Per input, in input order: the entry its one-at-a-time call records on success. */
  readonly audits: readonly AuditEntry[];
  write(tx: Db): Promise<void>;
}

/**
 * No plan: the input at `refusedAt` (and so perhaps later ones) would be refused. Every input
 * before it would not, and those plan again as a set of their own.
 */
export interface Refused {
  readonly refusedAt: number;
}

export const isRefused = (p: object): p is Refused => 'refusedAt' in p;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `column = any($1::uuid[])`: one parameter and one statement text whatever the count. An IN
 * list is a parameter per id for drizzle to build and the driver to bind, and a statement text
 * of its own per length for PostgreSQL to parse and plan.
 */
export function uuidIn(column: SQL.Aliased | SQL | { getSQL(): SQL }, ids: readonly string[]): SQL {
  // The ids go into an array literal: one that is not a uuid could add elements.
  for (const id of ids) if (!UUID.test(id)) throw new TypeError('uuidIn: not a uuid');
  return sql`${column} = any(${`{${ids.join(',')}}`}::uuid[])`;
}

/**
 * Waits for every statement issued together, then throws the first failure: once one has
 * failed the others fail too (the transaction is aborted), and the transaction must not end
 * while some are still in flight.
 */
export async function allSettled<T extends readonly unknown[]>(work: readonly [...{ [K in keyof T]: Promise<T[K]> }]): Promise<T> {
  const outcomes = await Promise.allSettled(work);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes.map((o) => (o as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** `allSettled` of writes whose values nobody reads. */
export async function settled(writes: ReadonlyArray<Promise<unknown>>): Promise<void> {
  await allSettled(writes);
}
