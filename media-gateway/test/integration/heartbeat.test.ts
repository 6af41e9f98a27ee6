import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, SUBJECTS, newId } from '@vap/shared';
import type { Payload } from '@vap/shared';
import { startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import { bistroAgent, dial } from '../gateway-world.js';

/**
 * What a gateway's heartbeat names while a call is being taken: the control plane creates the
 * call's conversation when it answers `call.prepare`, and the gateway learns the conversation's
 * id only when that answer arrives. A beat in between names the call by carrier and call id
 * (`preparing`), so the control plane does not take the new conversation for one the gateway
 * dropped; once the answer is in, the conversation is listed instead.
 */

const TENANT = 'ten_heartbeat_test';
let bus: InProcessBus;
let providers: ProviderRuntime;

beforeAll(async () => {
  bus = new InProcessBus();
  providers = await startProviders({});
}, 30_000);
afterAll(async () => {
  await providers?.close();
  await bus?.close();
});

describe('the heartbeat while a call is taken', () => {
  it('names the call in `preparing` until the answer to call.prepare arrives, then its conversation', async () => {
    const agentId = newId('agt');
    const conversationId = newId('conv');
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const prepare = bus.respond('callPrepare', async (req) => {
      await answered;
      return { ok: true, conversationId, startedAt: new Date().toISOString(), agent: { id: req.agentId, tenantId: req.tenantId, version: 1, config: bistroAgent(), llmApiKey: null }, caller: { phoneNumber: req.from, country: 'US' } };
    });
    const end = bus.respond('callEnd', async () => ({ ok: true }));
    const heartbeats: Payload<'gatewayHeartbeat'>[] = [];
    const sub = bus.subscribe('gatewayHeartbeat', SUBJECTS.gatewayHeartbeat.wildcard, (m) => void heartbeats.push(m.payload));
    const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent', GATEWAY_HEARTBEAT_INTERVAL_MS: '100' }), { bus, logger: pino({ level: 'silent' }), providers });
    try {
      const ours = () => heartbeats.filter((hb) => hb.gatewayId === gw.gatewayId);
      await vi.waitFor(() => expect(ours().length).toBeGreaterThan(0), { timeout: 5000, interval: 20 });
      expect(ours()[0]).toMatchObject({ activeConversationIds: [], preparing: [] });

      const { call } = await dial(gw, providers, agentId, TENANT, ['Hello.']);
      const waiting = { activeConversationIds: [], preparing: [{ provider: 'twilio', callSid: call.callSid }] };
      await vi.waitFor(() => expect(ours().at(-1)).toMatchObject(waiting), { timeout: 5000, interval: 20 });
      answer();
      await vi.waitFor(() => expect(ours().at(-1)).toMatchObject({ activeConversationIds: [conversationId], preparing: [] }), { timeout: 5000, interval: 20 });
      // Never neither: every beat names the call one way or the other from the first that names it.
      const first = ours().findIndex((hb) => hb.preparing?.length === 1);
      for (const hb of ours().slice(first)) expect(hb.activeConversationIds.length + (hb.preparing?.length ?? 0)).toBe(1);
      call.drop();
    } finally {
      await gw.close();
      await sub.close();
      await prepare.close();
      await end.close();
    }
  }, 30_000);
});
