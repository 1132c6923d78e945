/**
 * A TCP load balancer for several server nodes, the smallest one that behaves like a real
 * layer-4 balancer: each new connection goes to the next target in turn, and its bytes are
 * relayed untouched for its whole life — so an HTTP keep-alive connection stays on one node
 * and a websocket (an upgraded HTTP connection) lives on the node that accepted it.
 */
import net from 'node:net';
import { relay } from './tcp-proxy.ts';

export interface RoundRobinProxy {
  /** `http://127.0.0.1:<port>`: what the clients are given instead of a node's address. */
  readonly url: string;
  /** How many connections each target has been given so far (by index in `targets`). */
  readonly accepted: readonly number[];
  close(): Promise<void>;
}

export async function startRoundRobinProxy(targets: readonly string[]): Promise<RoundRobinProxy> {
  if (targets.length === 0) throw new Error('a round-robin proxy needs at least one target');
  const upstreams = targets.map((t) => {
    const { hostname, port } = new URL(t);
    return { host: hostname, port: Number(port) };
  });
  const accepted = upstreams.map(() => 0);
  const open = new Set<net.Socket>();
  let next = 0;
  const server = net.createServer((client) => {
    const index = next;
    next = (next + 1) % upstreams.length;
    accepted[index] = (accepted[index] ?? 0) + 1;
    const target = upstreams[index] as { host: string; port: number };
    const upstream = net.connect(target.port, target.host);
    open.add(client).add(upstream);
    // A node that dies takes its clients' connections with it, as a balancer's would, and the
    // clients reconnect (to the next node in turn).
    relay(client, upstream, () => {
      open.delete(client);
      open.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    accepted,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      open.clear();
      await closed;
    },
  };
}
