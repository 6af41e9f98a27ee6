import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, SUBJECTS, newId } from '@vap/shared';
import type { AgentConfig, BusSubscription, Payload } from '@vap/shared';
import { callerSpeechMulaw, startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import type { MediaGateway } from '../../src/gateway.js';
import { runCallerScript } from '../../src/simulators/scripted-caller.js';
import { StreamRefusedError } from '../../src/simulators/twilio-caller.js';
import type { TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { mediaStreamClosed } from '../../src/twilio/twilio-leg.js';
import { bistroAgent, dial as dialGateway, standInControlPlane } from '../gateway-world.js';

/**
 * A gateway's shutdown drain (`MediaGateway.drain`, what SIGTERM starts): real calls on a
 * pipeline thread, the sandbox provider simulators, a bus responder standing in for the
 * control plane. New streams are refused while the calls carried go on to their own end;
 * only a drain timeout or a hurry ends them (`gateway_shutdown`).
 */

const logger = pino({ level: 'silent' });
const TENANT = 'ten_drain_test';
const LINE = 'Hi, I would like to book a table for two tonight.';

let bus: InProcessBus;
let providers: ProviderRuntime;
let subscription: BusSubscription;
let conversations: Map<string, string>;
const ended = new Map<string, Payload<'sessionEnded'>>();
const agentId = newId('agt');
let gw: MediaGateway | undefined;
let calls: TwilioCallerSimulator[] = [];

beforeAll(async () => {
  bus = new InProcessBus();
  providers = await startProviders({});
  const cp = standInControlPlane(bus, new Map<string, AgentConfig>([[agentId, bistroAgent({ firstMessage: 'Hello! Thanks for calling Harbour Bistro. How can I help?' })]]), (r) => ended.set(r.conversationId, r));
  subscription = cp.subscription;
  conversations = cp.conversations;
}, 30_000);

afterEach(async () => {
  for (const c of calls) c.drop();
  calls = [];
  await gw?.close();
  gw = undefined;
});

afterAll(async () => {
  await subscription?.close();
  await providers?.close();
  await bus?.close();
});

async function startGateway(): Promise<MediaGateway> {
  gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' }), { bus, logger, providers });
  return gw;
}

/** A call whose greeting the caller has started to hear. */
async function callInProgress(g: MediaGateway): Promise<TwilioCallerSimulator> {
  const { call } = await dialGateway(g, providers, agentId, TENANT, [LINE]);
  calls.push(call);
  await vi.waitFor(() => expect(call.heardAgentAudioMs).toBeGreaterThan(0), { timeout: 15_000, interval: 20 });
  return call;
}

async function endRecord(call: TwilioCallerSimulator): Promise<Payload<'sessionEnded'>> {
  await vi.waitFor(() => expect(ended.has(conversations.get(call.callSid) ?? '')).toBe(true), { timeout: 15_000, interval: 50 });
  return ended.get(conversations.get(call.callSid)!)!;
}

describe('a draining gateway', () => {
  it('refuses new streams with 503 (reason draining) while the call in progress goes on and is answered, and resolves once that call hangs up', async () => {
    const g = await startGateway();
    const call = await callInProgress(g);
    let drainedWith: number | undefined;
    const drained = g.drain({ timeoutMs: 60_000 }).then((n) => (drainedWith = n));

    const detail = 'The gateway is shutting down: it finishes the 1 call it carries and takes no new one';
    const ready = await fetch(`${g.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(await ready.json()).toMatchObject({ status: 503, title: 'Not accepting calls', reason: 'draining', detail, gatewayId: g.gatewayId });
    expect(await (await fetch(`${g.url}/healthz`)).json()).toMatchObject({ status: 'ok', activeCalls: 1, acceptingCalls: false, refusing: 'draining' });
    const refusedBefore = mediaStreamClosed.get('draining');
    const refused = dialGateway(g, providers, agentId, TENANT, [LINE]);
    await expect(refused).rejects.toBeInstanceOf(StreamRefusedError);
    await expect(refused).rejects.toMatchObject({ status: 503, retryAfterS: 5, detail });
    expect(mediaStreamClosed.get('draining') - refusedBefore).toBe(1);
    expect(await (await fetch(`${g.url}/metrics`)).text()).toMatch(/^vap_accepting_calls 0$/m);

    // The call in progress is not touched: its caller talks and is answered.
    const script = { speech: callerSpeechMulaw, quietMs: 600 };
    await runCallerScript(call, [{ expectAgent: true }], script);
    const said = await call.say(await callerSpeechMulaw(LINE));
    await vi.waitFor(() => expect(call.firstAgentAudioAfter(said.endedAt)).not.toBeNull(), { timeout: 15_000, interval: 20 });
    expect(drainedWith).toBeUndefined();

    await call.hangup();
    await drained;
    expect(drainedWith).toBe(0);
    expect(await endRecord(call)).toMatchObject({ status: 'completed', endReason: 'user_ended' });
  }, 60_000);

  it('says so in its heartbeats from the start of the drain, the first sent at once (control planes then answer new calls with their apology)', async () => {
    const heartbeats: Payload<'gatewayHeartbeat'>[] = [];
    const sub = bus.subscribe('gatewayHeartbeat', SUBJECTS.gatewayHeartbeat.wildcard, (m) => void heartbeats.push(m.payload));
    try {
      // Beats every 5 s (the default): a beat within a second of the drain is the drain's own.
      const g = await startGateway();
      const ours = () => heartbeats.filter((hb) => hb.gatewayId === g.gatewayId);
      await vi.waitFor(() => expect(ours()).toHaveLength(1), { timeout: 5000, interval: 20 });
      expect(ours()[0]).toMatchObject({ draining: false, intervalMs: 5000 });
      const call = await callInProgress(g);
      const drained = g.drain({ timeoutMs: 60_000 });
      await vi.waitFor(() => expect(ours().length).toBeGreaterThan(1), { timeout: 1000, interval: 20 });
      expect(ours()[1]).toMatchObject({ draining: true, activeConversationIds: [conversations.get(call.callSid)] });
      await call.hangup();
      expect(await drained).toBe(0);
    } finally {
      await sub.close();
    }
  }, 30_000);

  it('resolves at once when no call is in progress', async () => {
    const g = await startGateway();
    const startedAt = performance.now();
    expect(await g.drain({ timeoutMs: 60_000 })).toBe(0);
    expect(performance.now() - startedAt).toBeLessThan(1000);
    expect((await fetch(`${g.url}/readyz`)).status).toBe(503);
  });

  it('gives up after its timeout with the calls still in progress, which close ends as gateway_shutdown', async () => {
    const g = await startGateway();
    const call = await callInProgress(g);
    const startedAt = performance.now();
    expect(await g.drain({ timeoutMs: 700 })).toBe(1);
    const tookMs = performance.now() - startedAt;
    expect(tookMs).toBeGreaterThanOrEqual(690);
    expect(tookMs).toBeLessThan(5000);
    await g.close();
    gw = undefined;
    expect(await endRecord(call)).toMatchObject({ status: 'failed', endReason: 'gateway_shutdown' });
  }, 30_000);

  it('gives up at once when hurried (a second signal)', async () => {
    const g = await startGateway();
    await callInProgress(g);
    const hurry = new AbortController();
    const drained = g.drain({ timeoutMs: 60_000, hurry: hurry.signal });
    await new Promise((r) => setTimeout(r, 300));
    const hurriedAt = performance.now();
    hurry.abort();
    expect(await drained).toBe(1);
    expect(performance.now() - hurriedAt).toBeLessThan(1000);
  }, 30_000);
});
