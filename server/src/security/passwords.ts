import os from 'node:os';
import argon2 from 'argon2';
import pLimit, { type LimitFunction } from 'p-limit';

/**
 * argon2id with OWASP's minimum (m = 19 MiB, t = 2, p = 1). The whole password is hashed:
 * no truncation, up to the API's 1024-character cap.
 */
const OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

// By default one core fewer than the machine has, at least one: see `limitPasswordHashing`.
let limit: LimitFunction = pLimit(Math.max(1, os.availableParallelism() - 1));

/**
 * How many argon2 computations run at once (`PASSWORD_HASH_CONCURRENCY`). Each is ~20 MiB
 * and tens of milliseconds of one core on libuv's pool (4 threads by default): a burst of
 * sign-ins with all four busy starved the event loop of a 2-core machine (/healthz p99 60 ms
 * under wrong-password sign-ins), while one at a time answered as many sign-ins per second
 * with /healthz at 19 ms (bench/healthz-under-load.ts). The rest wait their turn in order.
 */
export function limitPasswordHashing(concurrency: number): void {
  limit = pLimit(concurrency);
}

/** Hashes running and waiting now. */
export function passwordHashingLoad(): { readonly active: number; readonly pending: number } {
  return { active: limit.activeCount, pending: limit.pendingCount };
}

export function hashSecret(secret: string): Promise<string> {
  return limit(() => argon2.hash(secret, OPTIONS));
}

export async function verifySecret(hash: string, secret: string): Promise<boolean> {
  try {
    return await limit(() => argon2.verify(hash, secret));
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | null = null;

/**
 * Spends the time of a real verification when there is no account, so that response time
 * does not tell whether an email is registered.
 */
export async function burnVerification(secret: string): Promise<void> {
  dummyHash ??= hashSecret('fieldchart-timing-equaliser');
  await verifySecret(await dummyHash, secret);
}
