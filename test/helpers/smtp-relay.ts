/**
 * An SMTP relay on a loopback port that accepts connections and never says a word (a relay
 * that hung): what a send must give up on rather than wait for. Told to `answerWith` another
 * server, it passes the connections made from then on through to it, as a relay that came back.
 */
import net from 'node:net';
import { relay } from './tcp-proxy.ts';

export interface SilentRelay {
  /** `smtp://127.0.0.1:<port>` */
  readonly url: string;
  /** Connections accepted, silent or passed through. */
  connections(): number;
  /** From now on, new connections go through to this SMTP URL's host and port. */
  answerWith(smtpUrl: string): void;
  close(): Promise<void>;
}

export async function startSilentRelay(): Promise<SilentRelay> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  let target: { host: string; port: number } | null = null;
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    if (!target) {
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      return;
    }
    // SMTP's server speaks first: a silent relay must not connect at all, so this is not
    // tcp-proxy's `stall`; passing through is its `relay`.
    const upstream = net.connect(target.port, target.host);
    sockets.add(upstream);
    relay(socket, upstream, () => {
      sockets.delete(socket);
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    connections: () => connections,
    answerWith(smtpUrl) {
      const u = new URL(smtpUrl);
      target = { host: u.hostname, port: Number(u.port) };
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
