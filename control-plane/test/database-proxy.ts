import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import path from 'node:path';

/** A TCP hop in front of the tests' Postgres that a test can cut and restore. */
export interface DatabaseProxy {
  /** The database URL through the hop (same user, password and database). */
  url: string;
  /** Closes the listener and every connection through it: for the apps behind it the database is gone (connections dropped, new ones refused). */
  cut(): Promise<void>;
  /** Listens again on the same port: the database is back. */
  restore(): Promise<void>;
}

/**
 * Starts a {@link DatabaseProxy} to `databaseUrl` (TCP, or the Unix socket its `host`
 * parameter names, as the embedded Postgres is reached). The shared server runs on
 * whatever the proxy does, so one test's outage is not another's.
 */
export async function startDatabaseProxy(databaseUrl: string): Promise<DatabaseProxy> {
  const target = new URL(databaseUrl);
  const socketDir = target.searchParams.get('host');
  const targetPort = Number(target.port || 5432);
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const listen = async (port: number): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = socketDir ? connect(path.join(socketDir, `.s.PGSQL.${targetPort}`)) : connect(targetPort, target.hostname);
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
  const proxied = new URL(databaseUrl);
  proxied.search = '';
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  return {
    url: proxied.toString(),
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
