import { and, eq, isNull, lt } from 'drizzle-orm';
import { idempotencyKeys } from '@fieldchart/schema/db';
import { isUniqueViolation, type Db } from '../db/database.ts';
import type { Clock } from '../clock.ts';
import { Conflict, Invalid } from '../errors.ts';
import type { PhiCrypto } from '../security/phi-crypto.ts';
import { sha256 } from '../security/random-tokens.ts';

const ABANDONED_AFTER_MS = 120_000;
const inProgress = () => new Conflict('A request with this Idempotency-Key is still being processed', 'idempotency_in_progress');

export type IdempotencyClaim =
  | { readonly kind: 'new' }
  | { readonly kind: 'replay'; readonly statusCode: number; readonly body: string };

/**
 * Idempotency-Key (contract): the first request with a key claims it; its response is stored
 * and replayed to repeats with the same body; another body under the same key is a 422; a
 * repeat while the first is still running is a 409. A 5xx or a 429 releases the key so the
 * client's retry really runs.
 *
 * A write whose answer commits in its own transaction (`idempotentWrite` routes) may take over
 * an unfinished claim: a request cut by a crash or a lost database left it behind, and its write
 * rolled back with it, so the retry runs at once instead of answering 409 until the claim counts
 * as abandoned. Should the first request still be running, both write, and the one whose answer
 * commits second finds the claim completed, fails, and rolls its write back
 * (`completeInTransaction`).
 */
export function createIdempotency(deps: { db: Db; clock: Clock; phi: PhiCrypto; ttlSeconds: number }) {
  const { db, clock, phi } = deps;
  // A stored response can hold tokens or PHI: it is kept encrypted, bound to its key.
  const rowId = (scope: string, key: string) => `${scope}\u0000${key}`;
  /**
   * Stores the answer on a claim still unfinished; answers the rows it changed. A stored answer
   * is never replaced: a request that took over a claim and lost the race answers its 409
   * without overwriting the winner's answer.
   */
  const storeAnswer = (scope: string, key: string, statusCode: number, body: string) =>
    db
      .update(idempotencyKeys)
      .set({
        statusCode,
        responseBody: phi.seal(body, 'idempotency_keys', 'response_body', rowId(scope, key)),
        completedAt: clock.now(),
      })
      .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key), isNull(idempotencyKeys.completedAt)))
      .returning({ key: idempotencyKeys.key });
  return {
    requestHash(method: string, url: string, body: unknown): string {
      return sha256(`${method} ${url}\n${JSON.stringify(body ?? null)}`);
    },

    async claim(scope: string, key: string, requestHash: string, opts: { takeOver?: boolean } = {}): Promise<IdempotencyClaim> {
      const now = clock.now();
      for (let attempt = 0; attempt < 2; attempt++) {
        const [existing] = await db
          .select()
          .from(idempotencyKeys)
          .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key)));
        const age = existing ? now.getTime() - existing.createdAt.getTime() : 0;
        // An unfinished claim this old belongs to a node that died mid-request.
        const abandoned = existing?.completedAt === null && age > ABANDONED_AFTER_MS;
        if (existing && (abandoned || age > deps.ttlSeconds * 1000)) {
          await db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key)));
          continue;
        }
        if (existing) {
          if (existing.requestHash !== requestHash) {
            throw Invalid.field(
              'Idempotency-Key',
              'This Idempotency-Key was already used with a different request',
              'idempotency_key_reused',
            );
          }
          if (existing.statusCode === null || existing.responseBody === null) {
            if (opts.takeOver) return { kind: 'new' };
            throw inProgress();
          }
          const body = phi.open(existing.responseBody, 'idempotency_keys', 'response_body', rowId(scope, key)) ?? '';
          return { kind: 'replay', statusCode: existing.statusCode, body };
        }
        try {
          await db.insert(idempotencyKeys).values({ scope, key, requestHash, createdAt: now });
          return { kind: 'new' };
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
        }
      }
      throw inProgress();
    },

    async complete(scope: string, key: string, statusCode: number, body: string): Promise<void> {
      // A 5xx or a 429 releases the key: the retry must really run (a replay would also lose
      // the 429's Retry-After).
      if (statusCode >= 500 || statusCode === 429) {
        await db
          .delete(idempotencyKeys)
          .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key), isNull(idempotencyKeys.completedAt)));
        return;
      }
      await storeAnswer(scope, key, statusCode, body);
    },

    /**
     * Stores the answer of a write in the write's own transaction, if its claim is still
     * unfinished: a 409 otherwise (another request with the key answered first; the caller's
     * transaction, and its write, roll back).
     */
    async completeInTransaction(scope: string, key: string, statusCode: number, body: string): Promise<void> {
      const done = await storeAnswer(scope, key, statusCode, body);
      if (done.length === 0) throw inProgress();
    },

    async purgeExpired(): Promise<number> {
      const cutoff = new Date(clock.now().getTime() - deps.ttlSeconds * 1000);
      const gone = await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, cutoff)).returning({ key: idempotencyKeys.key });
      return gone.length;
    },
  };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
