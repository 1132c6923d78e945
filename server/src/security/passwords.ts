import argon2 from 'argon2';

/**
 * argon2id with OWASP's minimum (m = 19 MiB, t = 2, p = 1). The whole password is hashed:
 * no truncation, up to the API's 1024-character cap.
 */
const OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashSecret(secret: string): Promise<string> {
  return argon2.hash(secret, OPTIONS);
}

export async function verifySecret(hash: string, secret: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, secret);
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
