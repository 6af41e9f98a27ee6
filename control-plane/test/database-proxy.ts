import path from 'node:path';
import { startTcpProxy } from './tcp-proxy.js';
import type { TcpProxy } from './tcp-proxy.js';

/** A TCP hop in front of the tests' Postgres that a test can cut and restore. */
export interface DatabaseProxy extends Omit<TcpProxy, 'port'> {
  /** The database URL through the hop (same user, password and database). */
  url: string;
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
  const proxy = await startTcpProxy(socketDir ? { path: path.join(socketDir, `.s.PGSQL.${targetPort}`) } : { host: target.hostname, port: targetPort });
  const proxied = new URL(databaseUrl);
  proxied.search = '';
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  return { url: proxied.toString(), cut: proxy.cut, restore: proxy.restore };
}
