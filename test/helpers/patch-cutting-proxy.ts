/**
 * A TCP proxy that loses the line in the middle of an upload: once armed, the first connection
 * that starts a `PATCH` request is dropped after `afterBytes` of that request went through (a
 * phone losing signal mid-upload). It also notes the method, path and `Upload-Offset` of every
 * request it relays, so a test can see where each PATCH started.
 */
import net from 'node:net';
import { relay } from './tcp-proxy.ts';

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly uploadOffset: number | null;
}

export interface PatchCuttingProxy {
  readonly url: string;
  readonly requests: SeenRequest[];
  /** Drops the next PATCH after `afterBytes` of it (headers included). */
  arm(afterBytes: number): void;
  /** Bytes of the cut PATCH that were relayed before the drop (null before a cut). */
  readonly cutAfter: number | null;
  close(): Promise<void>;
}

const REQUEST_LINE = /(GET|HEAD|POST|PATCH|PUT|DELETE|OPTIONS) (\S+) HTTP\/1\.1\r\n([\s\S]*?)\r\n\r\n/g;

export async function startPatchCuttingProxy(target: string): Promise<PatchCuttingProxy> {
  const { hostname, port } = new URL(target);
  const requests: SeenRequest[] = [];
  const sockets = new Set<net.Socket>();
  let armed: number | null = null;
  let cutAfter: number | null = null;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    let inPatch: { sent: number } | null = null;
    // Headers are read from the client's bytes; request bodies may contain anything, so only
    // text that parses as a request line with headers counts.
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      for (const m of text.matchAll(REQUEST_LINE)) {
        const offset = /\r\nupload-offset: *(\d+)/i.exec(`\r\n${m[3]}`)?.[1];
        requests.push({ method: m[1]!, path: m[2]!, uploadOffset: offset === undefined ? null : Number(offset) });
        if (m[1] === 'PATCH' && armed !== null) inPatch = { sent: -(m.index ?? 0) };
      }
      if (!inPatch || armed === null) return;
      inPatch.sent += chunk.length;
      if (inPatch.sent >= armed) {
        cutAfter = inPatch.sent;
        armed = null;
        client.destroy();
        upstream.destroy();
      }
    });
    relay(client, upstream, () => {
      sockets.delete(client);
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    arm(afterBytes) {
      armed = afterBytes;
    },
    get cutAfter() {
      return cutAfter;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
