/**
 * The device side of the sync benches: a bare protocol peer (one websocket, the protocol's JSON
 * frames, bytes counted as they arrive), the servers' child process with its IPC requests, and
 * the small statistics and table helpers the sync scripts share.
 */
import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import type { ServerMessage } from '@fieldchart/schema/sync';
import { percentile, startChild } from './measure.ts';
import type { SyncRpc, SyncServers } from './sync-servers.ts';

export type Message = ServerMessage;
type Listener = (m: Message, bytes: number) => boolean | void;

/** One device's socket. Listeners see every message in order; one that returns true consumes it. */
export class SyncPeer {
  bytesReceived = 0;
  framesReceived = 0;
  readonly clientId = randomUUID();
  private listeners: Listener[] = [];
  private closedWith: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      this.bytesReceived += data.length;
      this.framesReceived++;
      const m = JSON.parse(data.toString('utf8')) as Message;
      for (const l of [...this.listeners]) if (l(m, data.length) === true) return;
    });
    ws.on('close', (code, reason) => {
      this.closedWith = { code, reason: reason.toString() };
      for (const l of [...this.listeners]) l({ type: '__closed' } as unknown as Message, 0);
    });
  }

  static async connect(url: string): Promise<SyncPeer> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new SyncPeer(ws);
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Adds a listener; answers the function that removes it. */
  on(listener: Listener): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** The next message of `type` (matching `where`), consumed. */
  next<T extends Message['type']>(type: T, where?: (m: Extract<Message, { type: T }>) => boolean, timeoutMs = 60_000): Promise<Extract<Message, { type: T }>> {
    type M = Extract<Message, { type: T }>;
    return new Promise<M>((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`no ${type} message within ${timeoutMs} ms`));
      }, timeoutMs);
      const off = this.on((m) => {
        if ((m.type as string) === '__closed') {
          clearTimeout(timer);
          off();
          reject(new Error(`socket closed (${this.closedWith?.code} ${this.closedWith?.reason}) before a ${type} message`));
          return false;
        }
        if (m.type !== type || (where && !where(m as M))) return false;
        clearTimeout(timer);
        off();
        resolve(m as M);
        return true;
      });
    });
  }

  /** Says hello (protocol 1 unless told); answers the welcome. The feed starts right behind it. */
  async hello(token: string, cursor: string | null = null, clientId = this.clientId, protocol = 1) {
    const welcome = this.next('welcome');
    this.send({ type: 'hello', protocol, token, client_id: clientId, cursor });
    return welcome;
  }

  close(): void {
    this.ws.close(1000);
  }
}

export interface FeedRun {
  readonly ms: number;
  readonly rows: number;
  readonly bytes: number;
  readonly messages: number;
  readonly cursor: string;
}

/**
 * Opens a socket, says hello and times everything until `synced`: welcome, reset, every
 * `changes` batch (parsed, as a device must) and the checkpoint.
 */
export async function initialSync(url: string, token: string): Promise<FeedRun> {
  const peer = await SyncPeer.connect(url);
  try {
    let rows = 0;
    let messages = 0;
    const off = peer.on((m) => {
      messages++;
      if (m.type === 'changes') rows += m.changes.length;
    });
    const started = performance.now();
    const synced = peer.next('synced', undefined, 180_000);
    peer.send({ type: 'hello', protocol: 1, token, client_id: peer.clientId, cursor: null });
    const done = await synced;
    const ms = performance.now() - started;
    off();
    return { ms, rows, bytes: peer.bytesReceived, messages, cursor: done.cursor };
  } finally {
    peer.close();
  }
}

// The servers' child process.

export interface SyncChild {
  readonly servers: SyncServers;
  rpc<K extends keyof SyncRpc>(cmd: K, args: SyncRpc[K]['args']): Promise<SyncRpc[K]['result']>;
  stop(): Promise<void>;
}

export async function startSyncServers(opts: { hocuspocus?: boolean } = {}): Promise<SyncChild> {
  if (opts.hocuspocus) process.env.BENCH_SYNC_HOCUSPOCUS = '1';
  const { stopChild } = await import('./measure.ts');
  const { child, ready } = await startChild<SyncServers>(new URL('./sync-servers.ts', import.meta.url));
  let next = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  child.on('message', (m: { rpc?: number; ok?: boolean; result?: unknown; error?: string }) => {
    if (m.rpc === undefined) return;
    const p = pending.get(m.rpc);
    pending.delete(m.rpc);
    if (m.ok) p?.resolve(m.result);
    else p?.reject(new Error(`servers: ${m.error}`));
  });
  child.on('exit', (code) => {
    for (const p of pending.values()) p.reject(new Error(`the servers exited (${code})`));
    pending.clear();
  });
  return {
    servers: ready,
    rpc(cmd, args) {
      const rpc = next++;
      return new Promise((resolve, reject) => {
        pending.set(rpc, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ rpc, cmd, args });
      });
    },
    stop: () => stopChild(child),
  };
}

/**
 * With BENCH_CPU_PROF=<dir>, profiles the servers' process around `fn` (V8's sampling
 * profiler, the one node --cpu-prof uses) and writes <dir>/<name>.cpuprofile.
 */
export async function profiled<T>(child: SyncChild, name: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return fn();
  await child.rpc('profile-start', {});
  try {
    return await fn();
  } finally {
    const { file } = await child.rpc('profile-stop', { file: `${dir.replace(/\/$/, '')}/${name}.cpuprofile` });
    process.stderr.write(`  profile: ${file}\n`);
  }
}

// Figures.

export interface Latencies {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  readonly max: number;
}

export function latencies(values: readonly number[]): Latencies {
  const sorted = Float64Array.from(values).sort();
  const sum = values.reduce((a, b) => a + b, 0);
  return { n: values.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean: sum / Math.max(1, values.length), max: sorted[sorted.length - 1] ?? Number.NaN };
}

/** A latency summary as the benches' JSON lines print it (ms, three decimals). */
export function latencyJson(l: Latencies) {
  return { n: l.n, p50Ms: Number(l.p50.toFixed(3)), p99Ms: Number(l.p99.toFixed(3)), meanMs: Number(l.mean.toFixed(3)) };
}

export function median(values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort(), 50);
}

export const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '—');
export const ratio = (n: number, base: number): string => (Number.isFinite(n / base) ? `${(n / base).toFixed(2)}×` : '—');

export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export { machine } from './measure.ts';

/** `--quick` (CI-sized) on the command line or BENCH_QUICK=1. */
export const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
