import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

/** A TCP hop in front of a service that a test can cut and restore (a network partition, a restart). */
export interface TcpProxy {
  /** The loopback port the hop listens on. */
  port: number;
  /** Closes the listener and every connection through it: the service is gone (connections dropped, new ones refused). */
  cut(): Promise<void>;
  /** Listens again on the same port: the service is back. */
  restore(): Promise<void>;
}

/** Starts a {@link TcpProxy} to `target` (a TCP address, or a Unix socket path). */
export async function startTcpProxy(target: { host: string; port: number } | { path: string }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const listen = async (port: number): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = 'path' in target ? connect(target.path) : connect(target.port, target.host);
      track(client);
      track(upstream);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return server;
  };
  let server: Server | null = await listen(0);
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    cut: async () => {
      const s = server;
      server = null;
      if (!s) return;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    restore: async () => {
      if (!server) server = await listen(port);
    },
  };
}
