import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy } from '../../control-plane/test/tcp-proxy.js';
import type { TcpProxy } from '../../control-plane/test/tcp-proxy.js';
import { callInProgress, collectUnhandledRejections, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

// The control plane reaches NATS through a TCP hop the test cuts (its NATS node restarting, a
// partition between it and the cluster); the gateway keeps its own connection, so the call
// goes on and its heartbeats keep flowing to a control plane that cannot hear them.

const natsUrl = process.env.TEST_NATS_URL;
const HEARTBEAT_MS = 1000;

describe.skipIf(!natsUrl)('the control plane cut off from NATS during a call', () => {
  let proxy: TcpProxy;
  let p: Platform;
  beforeAll(async () => {
    const nats = new URL(natsUrl!);
    proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
    p = await startPlatform('nats', { CALL_WATCHDOG_INTERVAL_MS: '500', GATEWAY_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS) }, { controlPlaneNatsUrl: `nats://127.0.0.1:${proxy.port}` });
  }, 60_000);
  const rejections = collectUnhandledRejections();
  afterEach(() => expect(rejections.reasons).toEqual([]));
  afterAll(async () => {
    await proxy?.restore();
    await p?.close();
    await proxy?.cut();
    rejections.stop();
  });

  it('does not take the gateway for lost: the call is not failed, and ends as it ended, with one SessionEnded', { timeout: 60_000 }, async () => {
    const { call, conversationId } = await callInProgress(p);

    await proxy.cut();
    // Well past three heartbeat intervals of the gateway, with watchdog passes every 0.5 s.
    await new Promise((r) => setTimeout(r, 5 * HEARTBEAT_MS));
    expect((await p.api('GET', `/api/v1/conversations/${conversationId}`)).body.status).toBe('in_progress');
    await proxy.restore();
    // The client reconnects (it waits up to 2 s between attempts) and the gateway's heartbeats arrive again.
    await new Promise((r) => setTimeout(r, 4 * HEARTBEAT_MS));
    expect((await p.api('GET', `/api/v1/conversations/${conversationId}`)).body.status).toBe('in_progress');

    await call.hangup();
    const conv = await p.finishedConversation(conversationId, 20_000);
    expect(conv).toMatchObject({ status: 'abandoned', endReason: 'user_ended' });
    expect(conv.cost).not.toBeNull();
    await expect.poll(() => p.events.filter((e) => e.data['conversationId'] === conversationId).map((e) => e.type), { timeout: 5000 }).toEqual(['SessionStarted', 'SessionEnded']);
  });
});
