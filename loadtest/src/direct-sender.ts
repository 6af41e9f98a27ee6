import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { WEBHOOK_HEADERS, signWebhook } from '@vap/shared';
import { arrivalKey } from './bench-receiver.js';

/** One signed POST of the baseline. */
export interface DirectDelivery {
  /** e.g. http://127.0.0.1:41234 */
  origin: string;
  /** e.g. /hook/0 */
  path: string;
  secret: string;
  deliveryId: string;
  /** The serialised envelope, sent and signed as is. */
  body: string;
}

/** What {@link sendDirect} saw. */
export interface DirectSendResult {
  /** `performance.now()` ms when the first request was started. */
  startedMs: number;
  /** {@link arrivalKey} → `performance.now()` ms when its request was started. */
  sentAtMs: Map<string, number>;
  /** Requests that failed or answered non-2xx. */
  errors: number;
}

/**
 * The baseline: POSTs `deliveries` in order with `concurrency` requests in flight, over
 * plain node:http keep-alive sockets (at most `concurrency`), each signed like the
 * dispatcher signs (fresh timestamp, same headers), with no queue, no database and no
 * retries. It is what a sender with the same concurrency could do at best on this machine.
 */
export async function sendDirect(deliveries: readonly DirectDelivery[], concurrency: number, timeoutMs: number): Promise<DirectSendResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, scheduling: 'lifo' });
  const sentAtMs = new Map<string, number>();
  let errors = 0;
  let next = 0;
  const startedMs = performance.now();

  const post = (d: DirectDelivery) =>
    new Promise<void>((resolve) => {
      const timestampSeconds = Math.floor(Date.now() / 1000);
      const req = http.request(d.origin + d.path, {
        method: 'POST',
        agent,
        timeout: timeoutMs,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(d.body),
          [WEBHOOK_HEADERS.signature]: signWebhook(d.secret, timestampSeconds, d.body),
          [WEBHOOK_HEADERS.timestamp]: String(timestampSeconds),
          [WEBHOOK_HEADERS.deliveryId]: d.deliveryId,
        },
      });
      req.on('response', (res) => {
        if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) errors++;
        res.resume();
        res.on('end', resolve);
        res.on('error', () => resolve());
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        errors++;
        resolve();
      });
      sentAtMs.set(arrivalKey(d.path, d.deliveryId), performance.now());
      req.end(d.body);
    });

  const worker = async () => {
    while (next < deliveries.length) await post(deliveries[next++]!);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, deliveries.length) }, worker));
  } finally {
    agent.destroy();
  }
  return { startedMs, sentAtMs, errors };
}
