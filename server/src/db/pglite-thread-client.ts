/**
 * The embedded database on a thread of its own (pglite-thread.ts), seen from the server's
 * thread through the part of PGlite's interface the project uses: query (params, rowMode, type
 * parsers, the pg adapter's pass-through serializers), exec, transaction (a real PGlite
 * transaction held in the thread until the callback settles), listen/unlisten (notifications
 * forwarded), dumpDataDir, close/closed. PGlite executes each statement synchronously, so
 * in-process it kept the event loop busy for the whole of every query; here the loop only
 * posts and receives messages (issue 15: /healthz stalled 0.4–1.4 s under load).
 *
 * This object is the only opener of the data directory in the process: the data-dir lock and
 * the single-writer rule hold as before.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';
import { query as templateQuery } from '@electric-sql/pglite/template';
import { passThroughSerializers } from './pg-wire-values.ts';
import { pgliteAssets } from './pglite-assets.ts';
import { deserializeError, type Envelope, type ThreadInit, type ThreadMessage, type ThreadRequest } from './pglite-thread-protocol.ts';

import type { EmbeddedPglite } from './embedded-pglite.ts';

export type { EmbeddedPglite } from './embedded-pglite.ts';

type Parser = (value: string, typeId: number) => unknown;
type Pending = { resolve: (value: unknown) => void; reject: (err: Error) => void };

/**
 * Running from source, the thread is compiled to one JavaScript file first, with the esbuild
 * that tsx itself runs on, and kept under node_modules/.cache by its sources' hash (every
 * process after the first finds it; a process compiles or looks at most once). Registering tsx inside each new thread instead cost
 * 0.7–0.9 s per thread, and every test database and source-run server starts one.
 */
let compiled: Promise<URL> | null = null;
async function compileFromSource(): Promise<URL> {
  const sources = ['./pglite-thread.ts', './pglite-thread-protocol.ts', './bytes-blob.ts'].map((f) => new URL(f, import.meta.url));
  const { build, version } = await import('esbuild');
  const hash = createHash('sha256').update(version);
  for (const f of sources) hash.update(await fs.readFile(f));
  // Inside the checkout, so that @electric-sql/pglite resolves from its node_modules.
  const out = new URL(`../../../node_modules/.cache/fieldchart-pglite-thread/${hash.digest('hex').slice(0, 16)}.mjs`, import.meta.url);
  const now = new Date();
  // Touched at each use: a file some process of this checkout still starts stays recent.
  const exists = await fs.utimes(out, now, now).then(() => true, () => false);
  if (!exists) {
    const { outputFiles } = await build({
      entryPoints: [fileURLToPath(sources[0]!)],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      write: false,
      logLevel: 'warning',
    });
    await fs.mkdir(new URL('.', out), { recursive: true });
    // Renamed into place: another process starting a thread never reads half a file.
    const tmp = new URL(`${out.href}.${process.pid}.tmp`);
    await fs.writeFile(tmp, outputFiles[0]!.contents);
    await fs.rename(tmp, out);
    await removeStaleCompiled(new URL('.', out), now.getTime() - STALE_AFTER_MS);
  }
  return out;
}

/** A compiled thread nobody started for this long is of sources that are gone: one file per edit otherwise piles up. */
const STALE_AFTER_MS = 24 * 3600_000;

export async function removeStaleCompiled(dir: URL, before: number): Promise<void> {
  for (const name of await fs.readdir(dir).catch(() => [])) {
    const file = new URL(name, dir);
    const stat = await fs.stat(file).catch(() => null);
    if (stat && stat.mtimeMs < before) await fs.rm(file, { force: true });
  }
}

async function startWorker(init: ThreadInit): Promise<Worker> {
  // No preloads: the parent's `--import tsx` (and a test run's hooks) would load again in the thread.
  const options = { workerData: init, transferList: init.loadDataDir ? [init.loadDataDir] : [], execArgv: [] };
  // The build (scripts/build.ts) emits the thread beside the bundle that opens it.
  const entry = import.meta.url.endsWith('.ts') ? await (compiled ??= compileFromSource()) : new URL('./pglite-thread.js', import.meta.url);
  return new Worker(entry, options);
}

export class PgliteThread implements EmbeddedPglite {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Map<number, { channel: string; callback: (payload: string) => void }>();
  readonly #txIds = new WeakMap<Transaction, number>();
  readonly #rawTypes = new WeakMap<object, number[]>();
  #nextId = 1;
  #nextTx = 1;
  #nextListener = 1;
  #closed = false;
  #failure: Error | null = null;
  /** Oids PGlite has parsers for (the pg adapter asks for all of them as raw text). */
  parsers: PGlite['parsers'] = {};

  private constructor(worker: Worker) {
    this.#worker = worker;
  }

  /**
   * The thread's init as the caller has it: the archive as a Blob or bytes (copied or read here,
   * then transferred), PGlite's assets this process's (pglite-assets.ts).
   */
  static async create(target: Omit<ThreadInit, 'loadDataDir' | 'assets'> & { readonly loadDataDir?: Blob | Uint8Array }): Promise<PgliteThread> {
    const { loadDataDir, ...init } = target;
    const archive = loadDataDir === undefined ? undefined : loadDataDir instanceof Uint8Array ? new Uint8Array(loadDataDir).buffer : await loadDataDir.arrayBuffer();
    const worker = await startWorker({ ...init, assets: await pgliteAssets(), ...(archive ? { loadDataDir: archive } : {}) });
    const thread = new PgliteThread(worker);
    const ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (m: ThreadMessage) => {
        if ('ready' in m) {
          thread.parsers = Object.fromEntries(m.parserTypes.map((t) => [t, (x: string) => x]));
          resolve();
        } else if ('failed' in m) reject(deserializeError(m.failed));
        else thread.#receive(m);
      });
      worker.on('error', (err) => {
        reject(err);
        thread.#fail(err);
      });
      worker.on('exit', (code) => {
        const err = new Error(`the database thread exited (code ${code})`);
        reject(err);
        thread.#fail(err);
      });
    });
    try {
      await ready;
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    // Idle, the thread must not keep the process alive (PGlite in-process did not); #call
    // holds a reference while a request is in flight.
    worker.unref();
    return thread;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Statements (simple queries and executes) the engine has run so far: benches count with it. */
  statementsRun(): Promise<number> {
    return this.#call({ op: 'statements' }) as Promise<number>;
  }

  #receive(m: ThreadMessage): void {
    if ('notify' in m) {
      for (const [listener, payload] of m.notify) this.#listeners.get(listener)?.callback(payload);
      return;
    }
    if (!('id' in m)) return;
    const pending = this.#pending.get(m.id);
    if (!pending) return;
    this.#pending.delete(m.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (m.ok) pending.resolve(m.value);
    else pending.reject(deserializeError(m.error));
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    this.#closed = true;
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  #call(request: ThreadRequest): Promise<unknown> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed && request.op !== 'close') return Promise.reject(new Error('PGlite is closed'));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      const envelope: Envelope = { ...request, id };
      this.#worker.postMessage(envelope);
    });
  }

  /** The oids of a parsers map, kept per map object (drizzle and the pg adapter reuse theirs). */
  #rawTypesOf(parsers: object | undefined): number[] | undefined {
    if (!parsers) return undefined;
    let types = this.#rawTypes.get(parsers);
    if (!types) {
      types = Object.keys(parsers).map(Number);
      this.#rawTypes.set(parsers, types);
    }
    return types;
  }

  /** The caller's parsers, applied here to the raw text the thread answered for their oids. */
  #parse<T>(result: Results<T>, parsers: QueryOptions['parsers']): Results<T> {
    if (!parsers || result.rows.length === 0) return result;
    const columns = result.fields
      .map((f, i) => ({ i, name: f.name, typeId: f.dataTypeID, parse: parsers[f.dataTypeID] as Parser | undefined }))
      .filter((c) => c.parse !== undefined);
    if (columns.length === 0) return result;
    for (const row of result.rows as unknown[]) {
      const cells = row as Record<string | number, unknown>;
      for (const c of columns) {
        const key = Array.isArray(row) ? c.i : c.name;
        const value = cells[key];
        if (typeof value === 'string') cells[key] = (c.parse as Parser)(value, c.typeId);
      }
    }
    return result;
  }

  #queryRequest(sql: string, params: unknown[] | undefined, options: QueryOptions | undefined, tx: number | undefined): ThreadRequest {
    if (options?.serializers && options.serializers !== passThroughSerializers) {
      throw new Error('custom serializers cannot cross to the database thread; pass values already encoded, or none');
    }
    if (options?.blob) throw new Error('blobs (COPY) are not supported across the database thread');
    const rawTypes = this.#rawTypesOf(options?.parsers);
    return {
      op: 'query',
      sql,
      params: params ?? [],
      ...(tx !== undefined ? { tx } : {}),
      ...(options?.rowMode ? { rowMode: options.rowMode } : {}),
      ...(options?.paramTypes ? { paramTypes: options.paramTypes } : {}),
      ...(options?.serializers ? { rawParams: true } : {}),
      ...(rawTypes ? { rawTypes } : {}),
    };
  }

  async #query<T>(sql: string, params: unknown[] | undefined, options: QueryOptions | undefined, tx?: number): Promise<Results<T>> {
    const result = (await this.#call(this.#queryRequest(sql, params, options, tx))) as Results<T>;
    return this.#parse(result, options?.parsers);
  }

  async #exec(sql: string, options: QueryOptions | undefined, tx?: number): Promise<Results[]> {
    if (options?.blob) throw new Error('blobs (COPY) are not supported across the database thread');
    const rawTypes = this.#rawTypesOf(options?.parsers);
    const results = (await this.#call({
      op: 'exec',
      sql,
      ...(tx !== undefined ? { tx } : {}),
      ...(options?.rowMode ? { rowMode: options.rowMode } : {}),
      ...(rawTypes ? { rawTypes } : {}),
    })) as Results[];
    return results.map((r) => this.#parse(r, options?.parsers));
  }

  query<T>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.#query<T>(sql, params, options);
  }

  exec(sql: string, options?: QueryOptions): Promise<Results[]> {
    return this.#exec(sql, options);
  }

  async transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
    const id = this.#nextTx++;
    await this.#call({ op: 'begin', tx: id });
    let closed = false;
    const checkClosed = () => {
      if (closed) throw new Error('Transaction is closed');
    };
    const tx: Transaction = {
      query: async <R>(sql: string, params?: unknown[], options?: QueryOptions) => {
        checkClosed();
        return this.#query<R>(sql, params, options, id);
      },
      sql: async <R>(strings: TemplateStringsArray, ...values: unknown[]) => {
        checkClosed();
        const q = templateQuery(strings, ...values);
        return this.#query<R>(q.query, q.params, undefined, id);
      },
      exec: async (sql: string, options?: QueryOptions) => {
        checkClosed();
        return this.#exec(sql, options, id);
      },
      rollback: async () => {
        checkClosed();
        await this.#call({ op: 'rollback', tx: id });
        closed = true;
      },
      listen: async (channel: string, callback: (payload: string) => void) => {
        checkClosed();
        return this.listen(channel, callback, tx);
      },
      get closed() {
        return closed;
      },
    };
    this.#txIds.set(tx, id);
    let result: T;
    try {
      result = await callback(tx);
    } catch (err) {
      closed = true;
      await this.#call({ op: 'end', tx: id, commit: false });
      throw err;
    }
    closed = true;
    await this.#call({ op: 'end', tx: id, commit: true });
    return result;
  }

  async listen(channel: string, callback: (payload: string) => void, tx?: Transaction): Promise<(tx?: Transaction) => Promise<void>> {
    const listener = this.#nextListener++;
    this.#listeners.set(listener, { channel, callback });
    const txId = tx ? this.#txIds.get(tx) : undefined;
    try {
      await this.#call({ op: 'listen', channel, listener, ...(txId !== undefined ? { tx: txId } : {}) });
    } catch (err) {
      this.#listeners.delete(listener);
      throw err;
    }
    return async (unlistenTx?: Transaction) => this.#unlisten(channel, [listener], unlistenTx);
  }

  async unlisten(channel: string, callback?: (payload: string) => void, tx?: Transaction): Promise<void> {
    const ids = [...this.#listeners].filter(([, l]) => l.channel === channel && (!callback || l.callback === callback)).map(([id]) => id);
    await this.#unlisten(channel, ids, tx);
  }

  async #unlisten(channel: string, ids: number[], tx: Transaction | undefined): Promise<void> {
    if (ids.length === 0) return;
    for (const id of ids) this.#listeners.delete(id);
    const txId = tx ? this.#txIds.get(tx) : undefined;
    await this.#call({ op: 'unlisten', channel, listeners: ids, ...(txId !== undefined ? { tx: txId } : {}) });
  }

  async dumpDataDir(compression: 'auto' | 'gzip' | 'none' = 'auto'): Promise<File | Blob> {
    const dump = (await this.#call({ op: 'dump', compression })) as { bytes: ArrayBuffer; type: string; name: string | null };
    return dump.name !== null ? new File([dump.bytes], dump.name, { type: dump.type }) : new Blob([dump.bytes], { type: dump.type });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#call({ op: 'close' });
    } finally {
      this.#closed = true;
      await this.#worker.terminate();
    }
  }
}
