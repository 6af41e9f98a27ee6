/**
 * What the webhook delivery tests share: a real HTTP receiver on loopback that records
 * every request (raw body, headers, arrival time) and answers as a test scripts it, a
 * dispatcher on an isolated database, and events staged through the real outbox.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { OutboundGuard, newId } from '@vap/shared';
import type { EventKind, OutboundGuardOptions, PlatformEvent } from '@vap/shared';
import type { Database } from '../../src/db/database.js';
import { EventOutbox } from '../../src/modules/webhooks/event-outbox.js';
import { WebhookDispatcher } from '../../src/modules/webhooks/webhook-dispatcher.js';
import type { WebhookDispatcherOptions } from '../../src/modules/webhooks/webhook-dispatcher.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY } from '../helpers.js';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() when the body had arrived. */
  atMs: number;
}

/** How the receiver answers one request: a status, optionally after a delay (ms), and a body other than the default. */
export type Answer = { status: number; delayMs?: number; body?: string };

export interface Receiver {
  url: string;
  received: Received[];
  /** Requests for one delivery id, in arrival order. */
  forDelivery(id: string): Received[];
  /** Next answers by path; when the script runs out, `fallback` answers. */
  script(path: string, answers: Answer[], fallback?: Answer): void;
  /** Resolves once `n` requests for `path` (any path when omitted) have arrived. */
  waitFor(n: number, path?: string, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const scripts = new Map<string, { answers: Answer[]; fallback: Answer }>();
  const waiters: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), atMs: performance.now() });
      for (const w of waiters.splice(0)) w();
      const s = scripts.get(path);
      const answer = s?.answers.shift() ?? s?.fallback ?? { status: 200 };
      const send = () => {
        if (!res.destroyed) res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body ?? (answer.status < 300 ? 'ok' : 'receiver says no'));
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const matching = (path?: string) => received.filter((r) => path === undefined || r.path === path);
  return {
    url,
    received,
    forDelivery: (id) => received.filter((r) => r.headers['x-webhook-delivery-id'] === id),
    script: (path, answers, fallback = { status: 200 }) => scripts.set(path, { answers: [...answers], fallback }),
    waitFor: (n, path, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`receiver: ${matching(path).length}/${n} requests for ${path ?? 'any path'} after ${timeoutMs} ms`)), timeoutMs);
        const check = () => {
          if (matching(path).length >= n) {
            clearTimeout(deadline);
            resolve(matching(path));
          } else waiters.push(check);
        };
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A dispatcher over `database` with the spec's timings unless overridden; loopback allowed. */
export function startDispatcher(database: Database, opts: Partial<WebhookDispatcherOptions> & { guard?: OutboundGuard; allow?: OutboundGuardOptions['allow'] } = {}): WebhookDispatcher {
  const { allow, ...rest } = opts;
  const dispatcher = new WebhookDispatcher({
    pool: database.pool,
    secrets: new SecretBox(TEST_SECRET_KEY),
    guard: new OutboundGuard({ allow: allow ?? ['127.0.0.1/32'] }),
    log: pino({ level: 'silent' }),
    userAgent: 'VoiceAgentPlatform-Webhooks/1',
    concurrency: 32,
    perWebhook: 4,
    pollIntervalMs: 500,
    ...rest,
  });
  return dispatcher;
}

/** An event in the spec's envelope for `agentId`, staged through the outbox in its own transaction. */
export async function emit(database: Database, outbox: EventOutbox, where: { tenantId: string; agentId: string }, type: EventKind = 'SessionEnded', data: Record<string, unknown> = {}): Promise<PlatformEvent> {
  const nowMs = Date.now();
  const event: PlatformEvent = { id: newId('evt', nowMs), type, agentId: where.agentId, tenantId: where.tenantId, timestamp: new Date(nowMs).toISOString(), data: { conversationId: newId('conv'), ...data } };
  await database.db.transaction(async (tx) => {
    await outbox.stage(tx, event);
  });
  outbox.wake();
  return event;
}

/** Polls `check` every 20 ms until it holds; throws after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

export { EventOutbox };
