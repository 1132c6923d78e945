/**
 * A TCP proxy between a client and a server, to make "offline" real in tests: `cut()` drops
 * every connection and refuses new ones (as a dead network would), `restore()` lets them
 * through again. Bytes are relayed untouched (HTTP and websockets alike).
 */
import net from 'node:net';

export interface TcpProxy {
  /** `http://127.0.0.1:<port>`: point the client here instead of at the server. */
  readonly url: string;
  cut(): void;
  restore(): void;
  /**
   * Sends new connections to `target` from now on (a server restarted on another port), so the
   * address the client knows stays the same. Open connections are left as they are.
   */
  retarget(target: string): void;
  readonly isCut: boolean;
  /**
   * A network that stalls mid-request: from the first chunk a client sends that `holds` picks
   * (e.g. a request line), that connection's bytes toward the server go nowhere and nothing
   * answers. `null` lets new requests through again and drops the held connections.
   */
  stall(holds: ((chunk: Buffer) => boolean) | null): void;
  /**
   * A network that holds a request and lets it go later: from the first chunk a client sends
   * that `holds` picks, that connection's bytes toward the server wait, until `release()`
   * sends them on in order and lets the rest through (a slow path, not a lost one).
   */
  delay(holds: ((chunk: Buffer) => boolean) | null): void;
  release(): void;
  /** Connections held by `stall` or `delay` so far. */
  readonly stalled: number;
  /** When (`Date.now()`) each connection through the proxy reached its target, in order. */
  readonly reached: readonly number[];
  close(): Promise<void>;
}

/**
 * Relays bytes both ways between two sockets, untouched; either side ending or failing ends
 * both (as a network path or a balancer would), after `onEnd`. With `pass`, each chunk toward
 * the server goes on only if it answers true.
 */
export function relay(client: net.Socket, upstream: net.Socket, onEnd: () => void, pass?: (chunk: Buffer) => boolean): void {
  const end = () => {
    onEnd();
    client.destroy();
    upstream.destroy();
  };
  client.on('error', end).on('close', end);
  upstream.on('error', end).on('close', end);
  if (pass) client.on('data', (chunk: Buffer) => void (pass(chunk) && upstream.write(chunk)));
  else client.pipe(upstream);
  upstream.pipe(client);
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  let { hostname, port } = new URL(target);
  type Pair = { client: net.Socket; upstream: net.Socket };
  const pairs = new Set<Pair>();
  const held = new Set<Pair>();
  let holds: ((chunk: Buffer) => boolean) | null = null;
  const waiting = new Map<Pair, Buffer[]>();
  let delays: ((chunk: Buffer) => boolean) | null = null;
  let stalled = 0;
  const reached: number[] = [];
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(port), hostname, () => reached.push(Date.now()));
    const pair = { client, upstream };
    pairs.add(pair);
    // Requests share kept-alive connections: each chunk is looked at, and once one is held
    // nothing more of that connection goes through.
    const pass = (chunk: Buffer) => {
      if (!held.has(pair) && holds?.(chunk)) {
        held.add(pair);
        stalled++;
      }
      if (held.has(pair)) return false;
      const queued = waiting.get(pair);
      if (queued) queued.push(chunk);
      else if (delays?.(chunk)) {
        waiting.set(pair, [chunk]);
        stalled++;
      }
      return !waiting.has(pair);
    };
    relay(client, upstream, () => {
      pairs.delete(pair);
      held.delete(pair);
      waiting.delete(pair);
    }, pass);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  const cutAll = () => {
    cut = true;
    for (const p of pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    pairs.clear();
  };
  return {
    url: `http://127.0.0.1:${address.port}`,
    cut: cutAll,
    restore() {
      cut = false;
    },
    retarget(next) {
      ({ hostname, port } = new URL(next));
    },
    get isCut() {
      return cut;
    },
    stall(next) {
      holds = next;
      if (next) return;
      for (const p of held) {
        p.client.destroy();
        p.upstream.destroy();
      }
      held.clear();
    },
    delay(next) {
      delays = next;
    },
    release() {
      delays = null;
      for (const [p, chunks] of waiting) for (const chunk of chunks) p.upstream.write(chunk);
      waiting.clear();
    },
    get stalled() {
      return stalled;
    },
    reached,
    async close() {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
