/**
 * The thread that owns the embedded database (started by pglite-thread-client.ts). PGlite runs
 * PostgreSQL compiled to WebAssembly synchronously inside each call, so a heavy query on the
 * server's own thread stalls every request, /healthz included; here it stalls only this thread.
 * Requests run concurrently on the one PGlite instance, whose own locks serialise them exactly
 * as they did in-process (a statement outside a transaction waits for it to finish).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite';
import { BytesBlob } from './bytes-blob.ts';
import { serializeError, type Envelope, type ThreadInit, type ThreadMessage } from './pglite-thread-protocol.ts';

if (!parentPort) throw new Error('pglite-thread runs as a worker thread');
const port = parentPort;
const init = workerData as ThreadInit;
const post = (m: ThreadMessage, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

interface OpenTx {
  readonly tx: Transaction;
  readonly finish: (commit: boolean) => void;
  /** Settles when `pglite.transaction(...)` does: after its COMMIT or ROLLBACK. */
  readonly done: Promise<unknown>;
}

const raw = (x: string): string => x;
const rawParsersCache = new Map<string, Record<number, (x: string) => string>>();
function rawParsers(types: readonly number[] | undefined): Record<number, (x: string) => string> | undefined {
  if (!types || types.length === 0) return undefined;
  const key = types.join(',');
  let parsers = rawParsersCache.get(key);
  if (!parsers) {
    parsers = Object.fromEntries(types.map((t) => [t, raw]));
    if (rawParsersCache.size > 64) rawParsersCache.clear();
    rawParsersCache.set(key, parsers);
  }
  return parsers;
}
/** Parameters the caller already encoded as PostgreSQL text (or bytes): sent as they are. */
const passThroughSerializers = new Proxy<Record<number | string, (x: string) => string>>({}, { get: () => raw });

let pglite: PGlite;
try {
  const { pgliteWasmModule, initdbWasmModule, fsBundle } = init.assets;
  pglite = await PGlite.create({
    dataDir: init.dataDir,
    pgliteWasmModule,
    initdbWasmModule,
    fsBundle: new BytesBlob(fsBundle),
    ...(init.sharedBuffers ? { startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${init.sharedBuffers}`] } : {}),
    ...(init.loadDataDir ? { loadDataDir: new BytesBlob(init.loadDataDir, 'application/x-tar') } : {}),
  });
} catch (err) {
  post({ failed: serializeError(err) });
  throw err;
}

// Every simple Query and Execute message reaching the engine: one per statement run (benches read it).
let statements = 0;
const execProtocolStream = pglite.execProtocolStream.bind(pglite);
pglite.execProtocolStream = (message, options) => {
  if (message[0] === 0x51 || message[0] === 0x45) statements++;
  return execProtocolStream(message, options);
};

const txs = new Map<number, OpenTx>();
const listeners = new Map<number, (payload: string) => void>();

/**
 * PGlite calls the listeners of a statement's notifications one microtask each, all queued
 * together; they cross to the server's thread as one message, as PostgreSQL sends a commit's
 * notifications together. Sent one message each, the server's side saw a transaction's pokes
 * in separate turns and could not take them as one (a commit pokes once per table it wrote).
 */
let notices: Array<readonly [number, string]> = [];
function notice(listener: number, payload: string): void {
  if (notices.length === 0) {
    queueMicrotask(() => {
      const batch = notices;
      notices = [];
      post({ notify: batch });
    });
  }
  notices.push([listener, payload]);
}

function target(tx: number | undefined): PGlite | Transaction {
  if (tx === undefined) return pglite;
  const open = txs.get(tx);
  if (!open) throw new Error('Transaction is closed');
  return open.tx;
}

async function begin(id: number): Promise<void> {
  let resolveTx!: (tx: Transaction) => void;
  const txReady = new Promise<Transaction>((resolve) => (resolveTx = resolve));
  let finish!: (commit: boolean) => void;
  const finished = new Promise<boolean>((resolve) => (finish = resolve));
  const done = pglite.transaction(async (tx) => {
    resolveTx(tx);
    if (!(await finished) && !tx.closed) await tx.rollback();
  });
  const tx = await Promise.race([
    txReady,
    done.then(() => {
      throw new Error('PGlite transaction ended before it started');
    }),
  ]);
  txs.set(id, { tx, finish, done });
}

async function handle(m: Envelope): Promise<{ value: unknown; transfer?: ArrayBuffer[] }> {
  switch (m.op) {
    case 'query': {
      const options: QueryOptions = {
        ...(m.rowMode ? { rowMode: m.rowMode } : {}),
        ...(m.paramTypes ? { paramTypes: [...m.paramTypes] } : {}),
      };
      const parsers = rawParsers(m.rawTypes);
      if (parsers) options.parsers = parsers;
      if (m.rawParams) options.serializers = passThroughSerializers;
      const result: Results = await target(m.tx).query(m.sql, [...m.params], options);
      return { value: result };
    }
    case 'exec': {
      const parsers = rawParsers(m.rawTypes);
      const options: QueryOptions = { ...(m.rowMode ? { rowMode: m.rowMode } : {}), ...(parsers ? { parsers } : {}) };
      return { value: await target(m.tx).exec(m.sql, options) };
    }
    case 'begin':
      await begin(m.tx);
      return { value: null };
    case 'end': {
      const open = txs.get(m.tx);
      if (!open) throw new Error('Transaction is closed');
      txs.delete(m.tx);
      open.finish(m.commit);
      await open.done;
      return { value: null };
    }
    case 'rollback': {
      const open = txs.get(m.tx);
      if (!open) throw new Error('Transaction is closed');
      await open.tx.rollback();
      return { value: null };
    }
    case 'listen': {
      const callback = (payload: string) => notice(m.listener, payload);
      listeners.set(m.listener, callback);
      const open = m.tx === undefined ? undefined : txs.get(m.tx)?.tx;
      try {
        await pglite.listen(m.channel, callback, open);
      } catch (err) {
        listeners.delete(m.listener);
        throw err;
      }
      return { value: null };
    }
    case 'unlisten': {
      const open = m.tx === undefined ? undefined : txs.get(m.tx)?.tx;
      for (const id of m.listeners) {
        const callback = listeners.get(id);
        listeners.delete(id);
        if (callback) await pglite.unlisten(m.channel, callback, open);
      }
      return { value: null };
    }
    case 'dump': {
      const file = await pglite.dumpDataDir(m.compression);
      const bytes = await file.arrayBuffer();
      return { value: { bytes, type: file.type, name: file instanceof File ? file.name : null }, transfer: [bytes] };
    }
    case 'statements':
      return { value: statements };
    case 'close':
      if (!pglite.closed) await pglite.close();
      return { value: null };
  }
}

port.on('message', (m: Envelope) => {
  handle(m)
    // A value that cannot be cloned fails this one request, not the thread.
    .then(({ value, transfer }) => post({ id: m.id, ok: true, value }, transfer))
    .catch((err: unknown) => post({ id: m.id, ok: false, error: serializeError(err) }));
});
post({ ready: true, parserTypes: Object.keys(pglite.parsers) });
