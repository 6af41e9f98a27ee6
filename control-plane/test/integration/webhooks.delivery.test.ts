/**
 * Webhook delivery against a real receiver on loopback: signing, the envelope, fan-out by
 * subscription, the outbound guard at delivery time, per-webhook bounds, the delivery log
 * and replay. The schedule's timings are in webhooks.retry.test.ts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { OutboundGuard, newId, verifyWebhook } from '@vap/shared';
import { webhooks } from '../../src/db/schema/webhooks.js';
import type { WebhookDispatcher } from '../../src/modules/webhooks/webhook-dispatcher.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, call } from '../helpers.js';
import { emit, startDispatcher, until } from './webhooks.fixtures.js';
import { webhookWorld } from './webhooks.world.js';

const w = webhookWorld();
let dispatcher: WebhookDispatcher | undefined;
let unsubscribe: (() => void) | undefined;

async function run(opts: Parameters<typeof startDispatcher>[1] = {}): Promise<WebhookDispatcher> {
  dispatcher = startDispatcher(w.t.database, opts);
  const d = dispatcher;
  unsubscribe = w.outbox.onWake(() => d.wake());
  await d.start();
  return d;
}

afterEach(async () => {
  unsubscribe?.();
  await dispatcher?.stop();
  dispatcher = undefined;
});

const where = () => ({ tenantId: w.tenant.tenantId, agentId: w.agentId });
const log = async (webhookId: string, query = '') => {
  const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/webhooks/${webhookId}/deliveries${query}`);
  expect(res.statusCode).toBe(200);
  return res.json();
};
describe('webhook delivery', () => {
  it('POSTs the envelope signed as the spec says; the exported verifier and plain node:crypto both accept it', async () => {
    const hook = await w.webhook('/signed', { secret: 'a-known-signing-secret-42' });
    await run();
    const event = await emit(w.t.database, w.outbox, where(), 'SessionStarted', { channel: 'phone', direction: 'inbound', caller: { phoneNumber: '+14155550100', country: 'US' }, metadata: {} });
    const [req] = await w.receiver.waitFor(1, '/signed');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['user-agent']).toBe('VoiceAgentPlatform-Webhooks/1');
    expect(req!.headers['x-webhook-delivery-id']).toBe(event.id);
    const ts = Number(req!.headers['x-webhook-timestamp']);
    expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(5);
    expect(JSON.parse(req!.body)).toEqual({ id: event.id, type: 'SessionStarted', agentId: w.agentId, tenantId: w.tenant.tenantId, timestamp: event.timestamp, data: event.data });
    expect(event.id).toMatch(/^evt_/);

    // Plain node:crypto, written from the spec: HMAC-SHA256(secret, "<timestamp>.<raw body>"), hex, "sha256=".
    const expected = Buffer.from(`sha256=${createHmac('sha256', 'a-known-signing-secret-42').update(`${ts}.${req!.body}`).digest('hex')}`);
    const got = Buffer.from(String(req!.headers['x-webhook-signature']));
    expect(got.length === expected.length && timingSafeEqual(got, expected)).toBe(true);
    expect(verifyWebhook('a-known-signing-secret-42', req!.headers, req!.body)).toEqual({ ok: true, deliveryId: event.id, timestampSeconds: ts });
    expect(verifyWebhook('another-secret-entirely', req!.headers, req!.body)).toMatchObject({ ok: false, status: 401 });
    expect(verifyWebhook('a-known-signing-secret-42', req!.headers, req!.body.replace('+14155550100', '+14155550199'))).toMatchObject({ ok: false, status: 401 });

    await until(async () => (await log(hook.id)).data[0]?.status === 'delivered');
    const entry = (await log(hook.id)).data[0];
    expect(entry).toMatchObject({ id: event.id, webhookId: hook.id, eventType: 'SessionStarted', attemptCount: 1, lastStatusCode: 200, nextAttemptAt: null });
    expect(entry.attempts).toEqual([{ attempt: 1, run: 0, at: expect.any(String), statusCode: 200, latencyMs: expect.any(Number), success: true, error: null }]);
  });

  it('delivers each kind only to enabled webhooks of that agent subscribed to it', async () => {
    const ended = await w.webhook('/ended-only', { events: ['SessionEnded'] });
    const errors = await w.webhook('/errors-only', { events: ['Error'] });
    await w.webhook('/disabled', { events: ['SessionEnded', 'Error'], enabled: false });
    const otherAgent = await w.agent();
    await w.webhook('/other-agent', { agentId: otherAgent, events: ['SessionEnded', 'Error'] });
    await run();
    const e1 = await emit(w.t.database, w.outbox, where(), 'SessionEnded');
    const e2 = await emit(w.t.database, w.outbox, where(), 'Error', { errorCode: 'stt_failed', errorMessage: 'x', recoverable: false });
    await emit(w.t.database, w.outbox, where(), 'SessionStarted');
    await w.receiver.waitFor(1, '/ended-only');
    await w.receiver.waitFor(1, '/errors-only');
    await new Promise((r) => setTimeout(r, 500));
    const paths = (id: string) => w.receiver.forDelivery(id).map((r) => r.path);
    expect(paths(e1.id)).toEqual(['/ended-only']);
    expect(paths(e2.id)).toEqual(['/errors-only']);
    expect(w.receiver.received.some((r) => r.path === '/disabled' || r.path === '/other-agent')).toBe(false);
    expect((await log(ended.id)).total).toBe(1);
    expect((await log(errors.id)).total).toBe(1);
  });

  it('refuses private targets at delivery time, also when DNS changed after the webhook was saved', async () => {
    // Saved while the name resolved publicly; now it resolves to a private address.
    const rebound = newId('whk');
    const secrets = new SecretBox(TEST_SECRET_KEY);
    await w.t.database.db.insert(webhooks).values({ id: rebound, tenantId: w.tenant.tenantId, agentId: w.agentId, url: `http://rebound.example:${new URL(w.receiver.url).port}/x`, events: ['SessionEnded'], secretSealed: secrets.seal('rebound-secret-123456'), secretHint: '…3456' });
    const loopback = await w.webhook('/loopback');
    const guard = new OutboundGuard({
      lookup: async (host) => (host === 'rebound.example' ? [{ address: '10.0.0.7', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]),
    });
    await run({ guard });
    const event = await emit(w.t.database, w.outbox, where(), 'SessionEnded');
    await until(async () => (await log(rebound)).data[0]?.attemptCount === 1 && (await log(loopback.id)).data[0]?.attemptCount === 1);
    const [r] = (await log(rebound)).data;
    expect(r).toMatchObject({ status: 'pending', lastStatusCode: null });
    expect(r.lastError).toMatch(/^blocked: .*10\.0\.0\.7.*private/);
    const [l] = (await log(loopback.id)).data;
    expect(l.lastError).toMatch(/^blocked: .*127\.0\.0\.1.*loopback/);
    expect(w.receiver.forDelivery(event.id)).toEqual([]);
  });

  it('keeps a slow receiver to its bound while other webhooks are delivered at once', async () => {
    const slowAgent = await w.agent();
    const slow = await w.webhook('/slow', { agentId: slowAgent, events: ['SessionEnded'] });
    await w.webhook('/fast', { events: ['SessionEnded'] });
    w.receiver.script('/slow', [], { status: 200, delayMs: 1500 });
    await run({ perWebhook: 2, concurrency: 8 });
    const t0 = performance.now();
    for (let i = 0; i < 4; i++) await emit(w.t.database, w.outbox, { tenantId: w.tenant.tenantId, agentId: slowAgent }, 'SessionEnded');
    for (let i = 0; i < 6; i++) await emit(w.t.database, w.outbox, where(), 'SessionEnded');
    const fast = await w.receiver.waitFor(6, '/fast', 5000);
    expect(fast.at(-1)!.atMs - t0).toBeLessThan(1000);
    // Two at a time at the slow receiver: two now, two more once the first pair answered.
    expect(w.receiver.received.filter((r) => r.path === '/slow')).toHaveLength(2);
    const slowAll = await w.receiver.waitFor(4, '/slow', 6000);
    expect(slowAll[2]!.atMs - slowAll[0]!.atMs).toBeGreaterThanOrEqual(1450);
    await until(async () => (await log(slow.id, '?status=delivered')).total === 4, 5000);
  });

  it('pages and filters the delivery log, and shows one delivery with its payload', async () => {
    const hook = await w.webhook('/log');
    await run();
    const events = [await emit(w.t.database, w.outbox, where(), 'SessionStarted'), await emit(w.t.database, w.outbox, where(), 'Error'), await emit(w.t.database, w.outbox, where(), 'SessionEnded')];
    await w.receiver.waitFor(3, '/log');
    await until(async () => (await log(hook.id, '?status=delivered')).total === 3);
    const page = await log(hook.id, '?pageSize=2&sortOrder=asc');
    expect(page).toMatchObject({ total: 3, page: 1, pageSize: 2, totalPages: 2 });
    expect(page.data.map((d: { id: string }) => d.id)).toEqual([events[0]!.id, events[1]!.id]);
    expect((await log(hook.id, '?eventType=Error')).data.map((d: { id: string }) => d.id)).toEqual([events[1]!.id]);
    expect((await log(hook.id, '?status=failed')).total).toBe(0);
    const bad = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/webhooks/${hook.id}/deliveries?status=lost`);
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0].field).toBe('status');

    const one = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/webhooks/${hook.id}/deliveries/${events[2]!.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json().payload).toEqual(events[2]);
    expect((await call(w.t.app, w.tenant.key, 'GET', `/api/v1/webhooks/${hook.id}/deliveries/evt_nope`)).statusCode).toBe(404);
  });

  it('replays a delivered event with the same id and body and a fresh timestamp and signature; refuses while pending', async () => {
    const hook = await w.webhook('/replay', { secret: 'replay-secret-0123456789' });
    const failing = await w.webhook('/never', { events: ['SessionEnded'] });
    w.receiver.script('/never', [], { status: 500 });
    await run();
    const event = await emit(w.t.database, w.outbox, where(), 'SessionEnded');
    const [first] = await w.receiver.waitFor(1, '/replay');
    await until(async () => (await log(hook.id)).data[0]?.status === 'delivered');
    await new Promise((r) => setTimeout(r, 1100)); // the next second, so the timestamp differs

    const res = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/webhooks/${hook.id}/deliveries/${event.id}/replay`);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ id: event.id, status: 'pending', replays: 1, payload: event });
    const second = (await w.receiver.waitFor(2, '/replay'))[1]!;
    expect(second.headers['x-webhook-delivery-id']).toBe(event.id);
    expect(second.body).toBe(first!.body);
    expect(Number(second.headers['x-webhook-timestamp'])).toBeGreaterThan(Number(first!.headers['x-webhook-timestamp']));
    expect(second.headers['x-webhook-signature']).not.toBe(first!.headers['x-webhook-signature']);
    expect(verifyWebhook('replay-secret-0123456789', second.headers, second.body).ok).toBe(true);
    await until(async () => (await log(hook.id)).data[0]?.status === 'delivered' && (await log(hook.id)).data[0]?.attemptCount === 2);
    expect((await log(hook.id)).data[0].attempts.map((a: { attempt: number; run: number }) => [a.attempt, a.run])).toEqual([
      [1, 0],
      [2, 1],
    ]);

    // Still retrying: no replay until its run is over. Unknown ids and disabled webhooks are refused too.
    const pending = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/webhooks/${failing.id}/deliveries/${event.id}/replay`);
    expect(pending.statusCode).toBe(409);
    expect(pending.json().type).toMatch(/\/errors\/invalid-state$/);
    expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/webhooks/${hook.id}/deliveries/evt_nope/replay`)).statusCode).toBe(404);
    await call(w.t.app, w.tenant.key, 'PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false });
    expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/webhooks/${hook.id}/deliveries/${event.id}/replay`)).statusCode).toBe(409);
  });

  it('does not send to a webhook disabled after the event was queued', async () => {
    const hook = await w.webhook('/turned-off');
    const event = await emit(w.t.database, w.outbox, where(), 'SessionEnded'); // queued, no dispatcher yet
    await call(w.t.app, w.tenant.key, 'PATCH', `/api/v1/webhooks/${hook.id}`, { enabled: false });
    await run();
    await until(async () => (await log(hook.id)).data[0]?.status === 'failed');
    expect((await log(hook.id)).data[0]).toMatchObject({ id: event.id, attemptCount: 1, lastError: 'webhook disabled; not sent' });
    expect(w.receiver.forDelivery(event.id)).toEqual([]);
  });

  it('records a failed attempt whose answer holds NUL characters (stored as U+FFFD) and retries it as scheduled', async () => {
    const hook = await w.webhook('/binary-error');
    w.receiver.script('/binary-error', [{ status: 500, body: 'gz\u0000\u0000 error' }], { status: 204 });
    await run();
    const event = await emit(w.t.database, w.outbox, where(), 'SessionEnded');
    await until(async () => (await log(hook.id)).data[0]?.status === 'delivered', 10_000);
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/webhooks/${hook.id}/deliveries/${event.id}`);
    expect(res.json().attempts.map((a: { statusCode: number; error: string | null }) => [a.statusCode, a.error])).toEqual([
      [500, 'HTTP 500: gz\ufffd\ufffd error'],
      [204, null],
    ]);
    expect(w.receiver.forDelivery(event.id)).toHaveLength(2);
  });
});
