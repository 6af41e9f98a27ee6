import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { AgentConfig, BusSubscription } from '@vap/shared';
import { startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import type { MediaGateway } from '../../src/gateway.js';
import { TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { TWILIO_MEDIA_STREAM_PATH } from '../../src/twilio/media-stream-server.js';
import { bistroAgent, dial, standInControlPlane } from '../gateway-world.js';

/**
 * A carrier that opens a second stream for a call the gateway already carries: the control plane
 * gives a stream from the same gateway the same conversation (a retry), so the gateway itself
 * must not start a second session on it.
 */
const logger = pino({ level: 'silent' });
const TENANT = 'ten_duplicate_test';
let bus: InProcessBus;
let providers: ProviderRuntime;
let gateway: MediaGateway;
const agents = new Map<string, AgentConfig>();
let sub: BusSubscription;
const agentId = newId('agt');

beforeAll(async () => {
  bus = new InProcessBus();
  providers = await startProviders({});
  agents.set(agentId, bistroAgent());
  sub = standInControlPlane(bus, agents).subscription;
  gateway = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' }), { bus, logger, providers });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await sub?.close();
  await providers?.close();
});

describe('a second stream of a call the gateway carries', () => {
  it('is hung up without a word while the first goes on', async () => {
    const { call: first } = await dial(gateway, providers, agentId, TENANT, []);
    const callSid = first.callSid;
    // The greeting is playing on the first stream.
    await vi.waitFor(() => expect(first.receivedMedia.length).toBeGreaterThan(10), { timeout: 10_000, interval: 20 });
    const conversationId = gateway.sessions!.summary(callSid)!.conversationId;
    expect(conversationId).toMatch(/^conv_/);

    const second = await TwilioCallerSimulator.connect(gateway.url.replace(/^http/, 'ws') + TWILIO_MEDIA_STREAM_PATH, { callSid, customParameters: { agentId, tenantId: TENANT } });
    expect(await second.closed).toBe(1000);
    expect(second.receivedMedia).toEqual([]);
    expect(gateway.sessions!.activeCalls).toBe(1);
    // The first call's summary is its own, not the refused stream's.
    expect(gateway.sessions!.summary(callSid)).toMatchObject({ conversationId, status: 'in_progress' });
    const before = first.receivedMedia.length;
    await vi.waitFor(() => expect(first.receivedMedia.length).toBeGreaterThan(before + 10), { timeout: 5_000, interval: 20 });
    await first.hangup();
  }, 30_000);
});
