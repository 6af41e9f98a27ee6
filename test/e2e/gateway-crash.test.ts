import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, twilioSid } from '@vap/media-gateway/simulators';
import { platformWithGatewayProcess } from './gateway-process.js';
import type { GatewayProcess } from './gateway-process.js';
import { TWILIO_TOKEN, collectUnhandledRejections } from './platform.js';
import type { Json, Platform } from './platform.js';

// A media gateway killed mid-call (kill -9): its process runs media-gateway/src/server.ts,
// exactly as deployed (own NATS connection, sandbox simulators in that process), while the
// control plane runs here on NATS. Only the control plane's watchdog can end the call.

const natsUrl = process.env.TEST_NATS_URL;
const HEARTBEAT_MS = 500;

let p: Platform;
let gateway: GatewayProcess | undefined;

describe.skipIf(!natsUrl)('a media gateway process killed mid-call', () => {
  beforeAll(async () => {
    // The platform's own in-process gateway stays idle (a surviving gateway beside the dead
    // one); the control plane hands callers the stream URL of the child process.
    ({ p, gateway } = await platformWithGatewayProcess({ CALL_WATCHDOG_INTERVAL_MS: '500' }, { GATEWAY_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS) }));
  }, 120_000);
  const rejections = collectUnhandledRejections();
  afterEach(() => expect(rejections.reasons).toEqual([]));
  afterAll(async () => {
    gateway?.kill();
    await p?.close();
    rejections.stop();
    expect(rejections.reasons).toEqual([]);
  });

  it('fails the call with gateway_lost within seconds, emits Error and SessionEnded, and the caller is cut off', async () => {
    const { number } = await p.agentWithNumber();
    const callSid = twilioSid('CA');
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
    if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
    const call = placed.call;

    // In progress, with the first message spoken and stored.
    const rowOf = async () => (await p.cp.database.pool.query<{ id: string; gateway_id: string }>('select id, gateway_id from conversations where external_id = $1', [callSid])).rows;
    await expect.poll(rowOf, { timeout: 5000 }).toHaveLength(1);
    const rows = await rowOf();
    const conversationId = rows[0]!.id;
    expect(rows[0]!.gateway_id).not.toBe(p.gateway.gatewayId);
    await expect.poll(async () => (await p.api('GET', `/api/v1/conversations/${conversationId}/messages`)).body.messages.length, { timeout: 15_000 }).toBeGreaterThan(0);
    expect((await p.api('GET', `/api/v1/conversations/${conversationId}`)).body.status).toBe('in_progress');
    expect(call.heardAgentAudioMs).toBeGreaterThan(0);

    const killedAt = Date.now();
    gateway!.child.kill('SIGKILL');

    // The caller's media socket dies with the process.
    const code = await Promise.race([call.closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 2000))]);
    expect(code).not.toBe('open');

    const conv: Json = await p.finishedConversation(conversationId, 10_000);
    const afterMs = Date.now() - killedAt;
    expect(conv).toMatchObject({ status: 'failed', endReason: 'gateway_lost', cost: null });
    // Three missed heartbeats (1.5 s) plus at most one watchdog period (0.5 s), with slack for a loaded machine.
    expect(afterMs).toBeLessThan(6000);
    expect(await p.storedError(conversationId)).toMatchObject({ code: 'gateway_lost' });

    await expect.poll(() => p.events.filter((e) => e.data['conversationId'] === conversationId).map((e) => e.type)).toEqual(['SessionStarted', 'Error', 'SessionEnded']);
    const mine = p.events.filter((e) => e.data['conversationId'] === conversationId);
    expect(mine[1]!.data).toMatchObject({ errorCode: 'gateway_lost', recoverable: false });
    expect(mine[2]!.data).toMatchObject({ endReason: 'gateway_lost' });
    // What the gateway stored before it died is kept.
    const { body } = await p.api('GET', `/api/v1/conversations/${conversationId}/messages`);
    expect(body.messages[0]).toMatchObject({ role: 'agent', content: 'Hello! Thanks for calling Harbour Bistro. How can I help?' });
  });
});
