/**
 * Shared assertions and helpers for the accounts suites: the contract's error shape, reading
 * reset codes out of the SMTP sink, counting rows, and minting tokens with the server's own
 * signing key (to show that a forged claim, not a broken signature, is what gets refused).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sql, type SQL } from 'drizzle-orm';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import { rowsOf } from '../../../server/src/db/database.ts';
import { eventually } from '../../helpers/eventually.ts';
import type { ApiResponse, TestServer } from '../../helpers/test-server.ts';

/** Internal text that must never reach a client: stack frames, source paths, SQL, driver words. */
const LEAK = /(\n\s+at\s|node_modules|\.ts:\d+|\bselect\b[^"]*\bfrom\b|\binsert into\b|\bduplicate key\b|violates|\bpostgres|\bpglite\b|\bdrizzle\b|\bstack\b)/i;

/** The contract's error body: `{status:false, message, code}` plus `errors` on 422 only. */
export function assertError(res: ApiResponse, status: number, code?: string): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  const b = res.body as Record<string, unknown>;
  assert.ok(b !== null && typeof b === 'object', `error body is not an object: ${String(b)}`);
  assert.equal(b.status, false);
  assert.equal(typeof b.message, 'string');
  assert.ok((b.message as string).length > 0, 'message is empty');
  assert.equal(typeof b.code, 'string');
  assert.match(b.code as string, /^[a-z][a-z0-9_]*$/, 'code is snake_case');
  if (code !== undefined) assert.equal(b.code, code, `code: ${JSON.stringify(b)}`);
  const allowed = status === 422 ? ['status', 'message', 'code', 'errors'] : ['status', 'message', 'code'];
  assert.deepEqual(
    Object.keys(b).filter((k) => !allowed.includes(k)),
    [],
    'unexpected members in the error body',
  );
  if (status === 422) {
    const errors = b.errors as Record<string, unknown>;
    assert.ok(errors && typeof errors === 'object' && !Array.isArray(errors), '422 carries errors');
    assert.ok(Object.keys(errors).length > 0, '422 names at least one field');
    for (const [field, list] of Object.entries(errors)) {
      assert.ok(Array.isArray(list) && list.length > 0, `errors.${field} is a non-empty array`);
      for (const m of list) assert.ok(typeof m === 'string' && m.length > 0, `errors.${field} holds strings`);
    }
  } else {
    assert.equal('errors' in b, false, 'errors only on 422');
  }
  assert.doesNotMatch(JSON.stringify(b), LEAK);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
}

/** The fields a 422 names. */
export function errorFields(res: ApiResponse): string[] {
  return Object.keys((res.body as { errors?: Record<string, string[]> }).errors ?? {}).sort();
}

export function assertOk(res: ApiResponse): void {
  assert.equal(res.status, 200, `expected 200, got ${res.status}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.status, true);
}

export function signIn(server: TestServer, email: string, password: string, headers: Record<string, string> = {}) {
  return server.api('POST', '/sign-in', { body: { email, password }, headers });
}

/** Signs in and answers the pair, failing the test unless it is a 200. */
export async function signedIn(server: TestServer, email: string, password: string) {
  const res = await signIn(server, email, password);
  assertOk(res);
  return { token: res.body.data.token as string, refreshToken: res.body.data.refresh_token as string };
}

/** GET /my-profile: the cheapest bearer check. */
export function profile(server: TestServer, token: string | null) {
  return server.api('GET', '/my-profile', { token });
}

export async function assertTokenWorks(server: TestServer, token: string, uuid?: string): Promise<void> {
  const res = await profile(server, token);
  assertOk(res);
  if (uuid) assert.equal(res.body.data.uuid, uuid);
}

export async function assertTokenRefused(server: TestServer, token: string, code = 'invalid_token'): Promise<void> {
  assertError(await profile(server, token), 401, code);
}

export function refresh(server: TestServer, refreshToken: string) {
  return server.api('POST', '/token/refresh', { body: { refresh_token: refreshToken } });
}

let unique = 0;
/** A fresh, valid, never-registered address. */
export function freshEmail(tag = 'user'): string {
  unique++;
  return `${tag}-${unique}-${process.pid}-${Math.random().toString(36).slice(2, 8)}@example.test`;
}

/** Where the sink's message list stands now: mails that arrive later have an index at or past it. */
export function mailMark(server: TestServer): number {
  return server.mail.messages.length;
}

/**
 * Waits until every queued mail to `email` has been handed to the sink, so that a mark taken
 * next separates old mail from new (a sent row's message is already in the sink).
 */
export async function mailSettled(server: TestServer, email: string): Promise<void> {
  await eventually(async () => {
    const pending = await countRows(
      server,
      sql`select count(*)::int as n from mail_outbox where to_address = ${email.toLowerCase()} and status <> 'sent'`,
    );
    assert.equal(pending, 0, `${pending} mails to ${email} not yet delivered`);
  });
}

/** Waits for a reset mail to `email` that arrived after `mark` and answers its 6-digit code. */
export async function resetCode(server: TestServer, email: string, mark: number): Promise<string> {
  const mail = await server.mail.waitFor(
    email,
    (m) => server.mail.messages.indexOf(m) >= mark && /reset code/i.test(m.subject),
  );
  const match = /\b(\d{6})\b/.exec(mail.text);
  assert.ok(match?.[1], `no 6-digit code in the mail: ${mail.text}`);
  assert.ok(mail.subject.includes(match[1]), 'subject and body carry the same code');
  return match[1];
}

/** A 6-digit code that is certainly not `code`. */
export function otherCode(code: string): string {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

/** Runs a query and answers its rows, on either driver. */
export async function query<T = Record<string, unknown>>(server: TestServer, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await server.runtime.database.db.execute(statement));
}

export async function countRows(server: TestServer, statement: SQL): Promise<number> {
  const [row] = await query<{ n: number }>(server, statement);
  return Number(row?.n ?? -1);
}

export async function usersWithEmail(server: TestServer, email: string): Promise<number> {
  return countRows(server, sql`select count(*)::int as n from users where email = ${email.toLowerCase()}`);
}

// ---- access tokens ----------------------------------------------------------------------

export function jwtParts(token: string): { header: ReturnType<typeof decodeProtectedHeader>; payload: JWTPayload } {
  return { header: decodeProtectedHeader(token), payload: decodeJwt(token) };
}

/** The server's own signing key, from its data dir (the test server generates it there). */
export async function serverSigningKey(server: TestServer): Promise<{ kid: string; key: CryptoKey | Uint8Array }> {
  const file = path.join(server.dataDir, 'keys', 'jwt-signing.jwks.json');
  const jwks = JSON.parse(fs.readFileSync(file, 'utf8')) as { keys: Array<JWK & { kid: string }> };
  const first = jwks.keys[0];
  assert.ok(first, 'the server has a signing key');
  return { kid: first.kid, key: await importJWK(first, 'ES256') };
}

/** Signs `payload` as an access token with the given key and header overrides. */
export async function mint(
  key: { kid: string; key: CryptoKey | Uint8Array },
  payload: JWTPayload,
  header: { alg?: string; typ?: string; kid?: string } = {},
): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: header.alg ?? 'ES256', kid: header.kid ?? key.kid, typ: header.typ ?? 'at+jwt' })
    .sign(key.key);
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** An unsigned token (`alg: none`) carrying `payload`. */
export function unsignedToken(payload: JWTPayload, kid: string): string {
  return `${b64url({ alg: 'none', typ: 'at+jwt', kid })}.${b64url(payload)}.`;
}

/** The bearer endpoints of the accounts area, each with a body it would accept. */
export function bearerEndpoints(password: string): Array<{ method: string; path: string; body?: unknown }> {
  return [
    { method: 'GET', path: '/my-profile' },
    { method: 'POST', path: '/logout' },
    {
      method: 'POST',
      path: '/change-password',
      body: { current_password: password, new_password: 'Another-long-pass-1', new_password_confirmation: 'Another-long-pass-1' },
    },
    { method: 'POST', path: '/delete-account', body: { password } },
  ];
}
