import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDatabaseProxy } from '../../control-plane/test/database-proxy.js';
import type { DatabaseProxy } from '../../control-plane/test/database-proxy.js';
import { callInProgress, collectUnhandledRejections, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

// The control plane reaches Postgres through a TCP hop the test cuts: a database restart or
// failover, as the platform sees it. The gateway and NATS stay up, so the calls go on.

const natsUrl = process.env.TEST_NATS_URL;
const HEARTBEAT_MS = 1000;

describe.skipIf(!natsUrl)('Postgres unreachable when a call ends', () => {
  let proxy: DatabaseProxy;
  let p: Platform;
  beforeAll(async () => {
    proxy = await startDatabaseProxy(inject('databaseUrl'));
    p = await startPlatform('nats', { DATABASE_URL: proxy.url, CALL_WATCHDOG_INTERVAL_MS: '500', GATEWAY_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS) });
  }, 60_000);
  const rejections = collectUnhandledRejections();
  afterEach(() => expect(rejections.reasons).toEqual([]));
  afterAll(async () => {
    await proxy?.restore();
    await p?.close();
    await proxy?.cut();
    rejections.stop();
  });

  it('keeps the call: the end record is stored once the database is back, the call is not taken for lost, and no event is doubled', { timeout: 60_000 }, async () => {
    const { call, conversationId } = await callInProgress(p);

    await proxy.cut();
    // Meanwhile the API says to come back later.
    const during = await p.api('GET', `/api/v1/conversations/${conversationId}`);
    expect(during.status).toBe(503);
    expect(during.body.type).toMatch(/\/errors\/unavailable$/);

    // The caller hangs up while no control plane can store anything.
    await call.hangup();
    await expect.poll(() => p.gateway.sessions!.activeCalls, { timeout: 5000 }).toBe(0);
    expect(p.gateway.sessions!.undeliveredEndRecords).toBe(1);
    // Well past three heartbeat intervals: what the watchdog would take for a lost gateway.
    await new Promise((r) => setTimeout(r, 4 * HEARTBEAT_MS));
    expect(p.gateway.sessions!.undeliveredEndRecords).toBe(1);

    await proxy.restore();
    const conv = await p.finishedConversation(conversationId, 20_000);
    // Hung up before any user turn: abandoned, as the gateway decided; priced, not gateway_lost.
    expect(conv).toMatchObject({ status: 'abandoned', endReason: 'user_ended' });
    expect(conv.cost).not.toBeNull();
    expect(conv.cost.totalUsd).toBeGreaterThan(0);
    expect(await p.storedError(conversationId)).toBeNull();
    await expect.poll(() => p.gateway.sessions!.undeliveredEndRecords, { timeout: 5000 }).toBe(0);
    const { body } = await p.api('GET', `/api/v1/conversations/${conversationId}/messages`);
    expect(body.messages[0]).toMatchObject({ role: 'agent', content: 'Hello! Thanks for calling Harbour Bistro. How can I help?' });

    // One SessionEnded, and no gateway_lost Error before it: a few more watchdog passes change nothing.
    await new Promise((r) => setTimeout(r, 4 * HEARTBEAT_MS));
    expect(p.events.filter((e) => e.data['conversationId'] === conversationId).map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']);
    expect((await p.finishedConversation(conversationId)).status).toBe('abandoned');
  });
});
