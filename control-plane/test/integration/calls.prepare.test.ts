import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { agentConfigSchema } from '@vap/shared';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { agentBody, call, createTenant, createTestApp, TEST_SECRET_KEY } from '../helpers.js';
import { SecretBox } from '../../src/secret-box.js';
import { STREAM_TOKEN_MAX_AGE_S, StreamTokens } from '../../src/modules/telephony/stream-token.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, prepareRequest, recordEvents, seedCall, startCalls } from './calls.fixtures.js';
import { newId } from '@vap/shared';

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let calls: CallHandling;
let events: ReturnType<typeof recordEvents>;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  other = await createTenant(t.database);
  calls = startCalls(t.database.db, t.bus);
  events = recordEvents(t.bus, tenant.tenantId);
});
afterAll(async () => {
  await events.close();
  await calls.close();
  await t.close();
});

async function rowOf(id: string) {
  const { rows } = await t.database.pool.query('select * from conversations where id = $1', [id]);
  return rows[0];
}

describe('call.prepare', () => {
  it('creates an in-progress conversation, emits SessionStarted and answers with the agent to run', async () => {
    const agent = await activeAgent(t.app, tenant.key, { firstMessage: 'Hello there!' });
    const req = prepareRequest(tenant.tenantId, agent.id);
    const before = Date.now();
    const reply = await t.bus.request('callPrepare', req);
    if (!reply.ok) throw new Error(reply.code);

    expect(reply.conversationId).toMatch(/^conv_[0-9a-z]{26}$/);
    expect(Date.parse(reply.startedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(reply.caller).toEqual({ phoneNumber: '+14155550123', country: 'US' });
    expect(reply.agent).toMatchObject({ id: agent.id, tenantId: tenant.tenantId, version: agent.version, llmApiKey: null });
    expect(reply.agent.config).toEqual(agentConfigSchema.parse(reply.agent.config));
    expect(reply.agent.config.firstMessage).toBe('Hello there!');

    const row = await rowOf(reply.conversationId);
    expect(row).toMatchObject({
      tenant_id: tenant.tenantId,
      agent_id: agent.id,
      agent_name: agent.name,
      agent_version: agent.version,
      status: 'in_progress',
      channel: 'phone',
      direction: 'inbound',
      provider: 'twilio',
      external_id: req.callSid,
      caller_phone: '+14155550123',
      caller_country: 'US',
      called_phone: '+442071838750',
      metadata: { campaign: 'spring' },
      gateway_id: req.gatewayId,
      ended_at: null,
      costs: null,
    });
    expect(row.started_at.toISOString()).toBe(reply.startedAt);

    await vi.waitFor(() => expect(events.of(reply.conversationId)).toHaveLength(1));
    const [started] = events.of(reply.conversationId);
    expect(started).toMatchObject({
      type: 'SessionStarted',
      agentId: agent.id,
      tenantId: tenant.tenantId,
      data: { conversationId: reply.conversationId, channel: 'phone', direction: 'inbound', caller: { phoneNumber: '+14155550123', country: 'US' }, metadata: { campaign: 'spring' } },
    });
    expect(started!.id).toMatch(/^evt_/);
    expect(new Date(started!.timestamp).toISOString()).toBe(started!.timestamp);
  });

  it('returns the same conversation to a retried prepare and emits SessionStarted once', async () => {
    const agent = await activeAgent(t.app, tenant.key);
    const req = prepareRequest(tenant.tenantId, agent.id);
    // Two at once (a gateway retrying after a timeout while the first is still running), then one more.
    const [a, b] = await Promise.all([t.bus.request('callPrepare', req), t.bus.request('callPrepare', req)]);
    const c = await t.bus.request('callPrepare', req);
    if (!a.ok || !b.ok || !c.ok) throw new Error('refused');
    expect(new Set([a.conversationId, b.conversationId, c.conversationId]).size).toBe(1);
    expect(c.startedAt).toBe(a.startedAt);
    const { rows } = await t.database.pool.query('select id from conversations where provider = $1 and external_id = $2', ['twilio', req.callSid]);
    expect(rows).toHaveLength(1);
    await vi.waitFor(() => expect(events.of(a.conversationId)).toHaveLength(1));
    await new Promise((r) => setTimeout(r, 50));
    expect(events.of(a.conversationId)).toHaveLength(1);
    // The same call from another gateway (a duplicated stream) would be a second agent on the line.
    expect(await t.bus.request('callPrepare', { ...req, gatewayId: newId('gw') })).toMatchObject({ ok: false, code: 'call-in-progress' });
    expect((await rowOf(a.conversationId)).gateway_id).toBe(req.gatewayId);
    // The same carrier call id for another tenant's agent is refused (answered, not a failed request), the conversation untouched.
    const foreign = await activeAgent(t.app, other.key);
    expect(await t.bus.request('callPrepare', { ...req, tenantId: other.tenantId, agentId: foreign.id })).toMatchObject({ ok: false, code: 'call-id-conflict' });
    expect(await rowOf(a.conversationId)).toMatchObject({ tenant_id: tenant.tenantId, agent_id: agent.id, status: 'in_progress' });
  });

  it('refuses a prepare for a call whose conversation has ended, and changes nothing', async () => {
    const agent = await activeAgent(t.app, tenant.key);
    const req = prepareRequest(tenant.tenantId, agent.id);
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id, { request: req });
    const before = await rowOf(conversationId);
    expect(before.status).toBe('completed');
    await vi.waitFor(() => expect(events.of(conversationId).map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']));
    // A second stream for the same carrier call (a replayed or duplicated stream) must not run the agent again.
    expect(await t.bus.request('callPrepare', { ...req, gatewayId: newId('gw') })).toMatchObject({ ok: false, code: 'call-ended' });
    expect(await rowOf(conversationId)).toEqual(before);
    await new Promise((r) => setTimeout(r, 50));
    expect(events.of(conversationId).map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']);
  });

  it('refuses an unknown agent, another tenant’s agent, and an agent that is not active', async () => {
    const draft = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody());
    const inactive = await activeAgent(t.app, tenant.key);
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${inactive.id}/deactivate`);
    const foreign = await activeAgent(t.app, other.key);

    const ask = (tenantId: string, agentId: string) => t.bus.request('callPrepare', prepareRequest(tenantId, agentId));
    expect(await ask(tenant.tenantId, 'agt_00000000000000000000000000')).toMatchObject({ ok: false, code: 'agent-not-found' });
    expect(await ask(tenant.tenantId, foreign.id)).toMatchObject({ ok: false, code: 'agent-not-found' });
    expect(await ask(tenant.tenantId, draft.json().id)).toMatchObject({ ok: false, code: 'agent-inactive' });
    expect(await ask(tenant.tenantId, inactive.id)).toMatchObject({ ok: false, code: 'agent-inactive' });
    const { rows } = await t.database.pool.query('select count(*)::int as n from conversations where agent_id = any($1)', [[foreign.id, draft.json().id, inactive.id]]);
    expect(rows[0].n).toBe(0);
  });

  it('takes a Telnyx stream only with a valid, fresh stream token for exactly this call, and stores nothing otherwise', async () => {
    const agent = await activeAgent(t.app, tenant.key);
    const tokens = new StreamTokens(new SecretBox(TEST_SECRET_KEY));
    const telnyx = (callSid: string, streamToken?: string) =>
      prepareRequest(tenant.tenantId, agent.id, { provider: 'telnyx', callSid, ...(streamToken === undefined ? {} : { streamToken }) });
    const ids = { provider: 'telnyx', tenantId: tenant.tenantId, agentId: agent.id };
    const stale = new StreamTokens(new SecretBox(TEST_SECRET_KEY), () => Date.now() - (STREAM_TOKEN_MAX_AGE_S + 60) * 1000);
    const foreignKey = new StreamTokens(new SecretBox(Buffer.alloc(32, 7)));
    const refused = [
      telnyx('v3:no-token'),
      telnyx('v3:empty', ''),
      telnyx('v3:garbled', 'st1.x.y'),
      // A token of another call (a replayed answer), of another key, or minted too long ago.
      telnyx('v3:other-call', tokens.mint({ ...ids, callSid: 'v3:the-routed-call' })),
      telnyx('v3:other-key', foreignKey.mint({ ...ids, callSid: 'v3:other-key' })),
      telnyx('v3:stale', stale.mint({ ...ids, callSid: 'v3:stale' })),
    ];
    for (const req of refused) expect(await t.bus.request('callPrepare', req)).toMatchObject({ ok: false, code: 'stream-unauthenticated' });
    // Another tenant's agent with this call's token: the token names the tenant and agent too.
    const foreign = await activeAgent(t.app, other.key);
    const swapped = prepareRequest(other.tenantId, foreign.id, { provider: 'telnyx', callSid: 'v3:swapped', streamToken: tokens.mint({ ...ids, callSid: 'v3:swapped' }) });
    expect(await t.bus.request('callPrepare', swapped)).toMatchObject({ ok: false, code: 'stream-unauthenticated' });
    const { rows } = await t.database.pool.query("select id from conversations where provider = 'telnyx' and external_id = any($1)", [[...refused.map((r) => r.callSid), 'v3:swapped']]);
    expect(rows).toEqual([]);

    const ok = await t.bus.request('callPrepare', telnyx('v3:routed', tokens.mint({ ...ids, callSid: 'v3:routed' })));
    if (!ok.ok) throw new Error(ok.code);
    // The token is proof, not call data: it is not kept with the conversation.
    expect((await rowOf(ok.conversationId)).metadata).toEqual({ campaign: 'spring' });
    // Twilio and Vonage sign their upgrades, which the gateway checks: they need no token.
    expect((await t.bus.request('callPrepare', prepareRequest(tenant.tenantId, agent.id))).ok).toBe(true);
  });

  it('refuses calls of a suspended tenant', async () => {
    const suspended = await createTenant(t.database);
    const agent = await activeAgent(t.app, suspended.key);
    await t.database.pool.query(`update tenants set status = 'suspended' where id = $1`, [suspended.tenantId]);
    expect(await t.bus.request('callPrepare', prepareRequest(suspended.tenantId, agent.id))).toMatchObject({ ok: false, code: 'tenant-suspended' });
  });

  it('hands over the decrypted bring-your-own LLM key', async () => {
    const agent = await activeAgent(t.app, tenant.key, { llm: { provider: 'huggingface', model: 'my-org/llama', endpointUrl: 'https://hf.example.com/v1', apiKey: 'hf_secret_value' } });
    const reply = await t.bus.request('callPrepare', prepareRequest(tenant.tenantId, agent.id));
    if (!reply.ok) throw new Error(reply.code);
    expect(reply.agent.llmApiKey).toBe('hf_secret_value');
    expect(reply.agent.config.llm).toEqual({ provider: 'huggingface', model: 'my-org/llama', endpointUrl: 'https://hf.example.com/v1' });
  });

  it('takes the caller from To on outbound calls and leaves non-phone callers null', async () => {
    const agent = await activeAgent(t.app, tenant.key);
    const outbound = await t.bus.request('callPrepare', prepareRequest(tenant.tenantId, agent.id, { direction: 'outbound', from: '+14155550100', to: '+33 1 42 68 53 00' }));
    if (!outbound.ok) throw new Error(outbound.code);
    expect(outbound.caller).toEqual({ phoneNumber: '+33142685300', country: 'FR' });
    expect((await rowOf(outbound.conversationId)).called_phone).toBe('+14155550100');

    const web = await t.bus.request('callPrepare', prepareRequest(tenant.tenantId, agent.id, { provider: 'webrtc', channel: 'webrtc', from: 'client:alice', to: null }));
    if (!web.ok) throw new Error(web.code);
    expect(web.caller).toEqual({ phoneNumber: null, country: null });
    expect(await rowOf(web.conversationId)).toMatchObject({ channel: 'webrtc', provider: 'webrtc', caller_phone: null, caller_country: null, called_phone: null });
  });
});
