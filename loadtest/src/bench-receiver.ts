import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { verifyWebhook } from '@vap/shared';

/**
 * The webhook benchmark's receiver: a node:http server on 127.0.0.1 that verifies every
 * request with `verifyWebhook` against the secret of its path and records when each
 * delivery first arrived. The dispatcher sends the event id as the delivery id to every
 * webhook of the event, so a delivery is keyed by path and delivery id.
 */
export interface BenchReceiver {
  /** Origin, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Accepts deliveries on `path` (e.g. `/hook/0`) signed with `secret`. */
  route(path: string, secret: string): void;
  /** `<path> <deliveryId>` → first arrival, `performance.now()` ms of this process. */
  readonly arrivals: ReadonlyMap<string, number>;
  /** Requests refused by `verifyWebhook`, an unknown path or a missing delivery id. */
  readonly verifyFailures: number;
  /** Verified requests for a delivery that had already arrived. */
  readonly duplicates: number;
  /** Forgets arrivals and counters (routes stay), between phases. */
  reset(): void;
  /** Resolves true once `count` distinct deliveries arrived, false after `timeoutMs`. */
  waitFor(count: number, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The key of {@link BenchReceiver.arrivals}. */
export function arrivalKey(path: string, deliveryId: string): string {
  return `${path} ${deliveryId}`;
}

/** Starts a {@link BenchReceiver} on an ephemeral loopback port. */
export async function startBenchReceiver(): Promise<BenchReceiver> {
  const secrets = new Map<string, string>();
  const arrivals = new Map<string, number>();
  let verifyFailures = 0;
  let duplicates = 0;
  let waiter: { count: number; resolve: (ok: boolean) => void } | undefined;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const secret = secrets.get(path);
      const v = secret === undefined ? undefined : verifyWebhook(secret, req.headers, Buffer.concat(chunks));
      if (!v?.ok || v.deliveryId === null) {
        verifyFailures++;
        res.writeHead(v && !v.ok ? v.status : 404).end();
        return;
      }
      const key = arrivalKey(path, v.deliveryId);
      if (arrivals.has(key)) duplicates++;
      else arrivals.set(key, performance.now());
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (waiter && arrivals.size >= waiter.count) waiter.resolve(true);
    });
  });
  // Keep-alive sockets outlive a phase; the sender's own idle timeout (4 s) closes first.
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    route: (path, secret) => void secrets.set(path, secret),
    arrivals,
    get verifyFailures() {
      return verifyFailures;
    },
    get duplicates() {
      return duplicates;
    },
    reset() {
      arrivals.clear();
      verifyFailures = 0;
      duplicates = 0;
    },
    waitFor(count, timeoutMs) {
      if (arrivals.size >= count) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => done(false), timeoutMs);
        const done = (ok: boolean) => {
          clearTimeout(timer);
          waiter = undefined;
          resolve(ok);
        };
        waiter = { count, resolve: done };
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
