/**
 * A real Fieldchart server for a suite: real HTTP on a loopback port, a fresh database from
 * the backend factory, the real worker, and a real SMTP conversation with a local sink.
 *
 * Whole-server tests reach the server through its door, `@fieldchart/server`, as the CLI does.
 * A unit test of one internal module may import that module by path (README, Layout: Doors).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { API_PREFIX, loadConfig, openDatabase, startRuntime, type Clock, type Config, type Runtime } from '@fieldchart/server';
import type { TestBackend, TestDatabase } from './backends.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';

export const API = API_PREFIX;

/** A server's env with the request limits off, for suites whose subject is not the limits. */
export const RATE_LIMITS_OFF = { RATE_LIMIT_PER_USER_PER_MINUTE: '0', RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '0' } as const;

export interface ApiResponse<T = any> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

export interface RequestOptions {
  readonly token?: string | null;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Send this string as the body verbatim (malformed JSON tests). */
  readonly rawBody?: string;
}

export interface TestServer {
  readonly url: string;
  readonly runtime: Runtime;
  readonly config: Config;
  readonly mail: SmtpSink;
  readonly db: TestDatabase;
  readonly dataDir: string;
  request<T = any>(method: string, pathname: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  /** `request` with the API prefix. */
  api<T = any>(method: string, pathname: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export async function startTestServer(
  backend: TestBackend,
  opts: {
    env?: Record<string, string>;
    clock?: Clock;
    /** Another node of `peer`'s deployment: its PostgreSQL database and its data dir (keys). */
    peer?: TestServer;
  } = {},
): Promise<TestServer> {
  const mail = await startSmtpSink();
  const db = opts.peer ? await joinDatabase(opts.peer) : await backend.open();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-test-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    HOST: '127.0.0.1',
    PORT: '0',
    FIELDCHART_DATA_DIR: opts.peer ? opts.peer.dataDir : dataDir,
    SMTP_URL: mail.url,
    ...(db.url ? { DATABASE_URL: db.url } : {}),
    ...opts.env,
  });
  const runtime = await startRuntime(config, { database: db.database, ...(opts.clock ? { clock: opts.clock } : {}) });
  const url = runtime.url ?? '';

  async function request<T>(method: string, pathname: string, o: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | undefined;
    if (o.rawBody !== undefined) {
      body = o.rawBody;
      headers['content-type'] ??= 'application/json';
    } else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + pathname, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the raw text stays in body
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  return {
    url,
    runtime,
    config,
    mail,
    db,
    dataDir,
    request,
    api: (method, pathname, o) => request(method, API + pathname, o),
    async close() {
      await runtime.close();
      await db.drop();
      await mail.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let counter = 0;

/** A unique, valid registration body. */
export function newAccount(overrides: Partial<Record<'first_name' | 'last_name' | 'email' | 'password', string>> = {}) {
  counter++;
  const password = overrides.password ?? `Passw0rd-${counter}-long-enough`;
  return {
    first_name: overrides.first_name ?? 'Riley',
    last_name: overrides.last_name ?? `Tester${counter}`,
    email: overrides.email ?? `clinician${counter}.${process.pid}.${Date.now()}@example.test`,
    password,
    password_confirmation: password,
  };
}

/** Registers a fresh account and answers its credentials and tokens. */
export async function registerUser(server: TestServer, overrides: Parameters<typeof newAccount>[0] = {}) {
  const account = newAccount(overrides);
  const res = await server.api('POST', '/register', { body: account });
  if (res.status !== 200) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    ...account,
    token: res.body.data.token as string,
    refreshToken: res.body.data.refresh_token as string,
    uuid: res.body.data.user.uuid as string,
  };
}

/** A second connection pool to a peer's PostgreSQL database; closing it leaves the database. */
async function joinDatabase(peer: TestServer): Promise<TestDatabase> {
  if (!peer.db.url) throw new Error('only a PostgreSQL deployment has several nodes');
  const database = await openDatabase({ kind: 'postgres', url: peer.db.url });
  return { database, url: peer.db.url, drop: () => database.close() };
}
