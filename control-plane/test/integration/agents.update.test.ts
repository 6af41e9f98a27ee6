import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { BusMessage } from '@vap/shared';
import { call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let bus: InProcessBus;
let tenant: TestTenant;
/** A second key of the tenant whose id we know, to check `createdBy`. */
let writer: { id: string; key: string };

beforeAll(async () => {
  bus = new InProcessBus();
  t = await createTestApp({ bus });
  tenant = await createTenant(t.database);
  writer = await tenant.mintKey();
});
afterAll(async () => t.close());

const createAgent = (overrides: Record<string, unknown> = {}) => createAgentFor(t.app, tenant.key, overrides);

function patch(id: string, body: unknown, key = writer.key) {
  return call(t.app, key, 'PATCH', `/api/v1/agents/${id}`, body);
}

async function versionRecord(id: string, n: number) {
  const res = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${id}/versions/${n}`);
  expect(res.statusCode).toBe(200);
  return res.json();
}

function fieldsOf(res: { json(): { errors?: { field: string }[] } }): string[] {
  return (res.json().errors ?? []).map((e) => e.field);
}

describe('PATCH /api/v1/agents/{agentId}', () => {
  it('merges nested objects deeply, keeping the fields it does not name', async () => {
    const agent = await createAgent({ voice: { provider: 'elevenlabs', voiceId: 'voice-1', similarityBoost: 0.3 } });
    const res = await patch(agent.id, { voice: { stability: 0.5 } });
    expect(res.statusCode).toBe(200);
    const updated = res.json();
    expect(updated.voice).toEqual({ provider: 'elevenlabs', voiceId: 'voice-1', similarityBoost: 0.3, stability: 0.5 });
    expect(updated.version).toBe(2);
    const { voice: _v1, version: _n1, updatedAt: _u1, ...restBefore } = agent;
    const { voice: _v2, version: _n2, updatedAt: _u2, ...restAfter } = updated;
    expect(restAfter).toEqual(restBefore);
    expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(Date.parse(agent.updatedAt));
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toEqual(updated);
  });

  it('replaces arrays whole rather than merging them', async () => {
    const agent = await createAgent({ tags: ['a', 'b'], endCallPhrases: ['bye', 'goodbye'] });
    const res = await patch(agent.id, { tags: ['c'], endCallPhrases: ['ciao'] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ tags: ['c'], endCallPhrases: ['ciao'] });
    const emptied = await patch(agent.id, { tags: [] });
    expect(emptied.json().tags).toEqual([]);
    expect(emptied.json().endCallPhrases).toEqual(['ciao']);
  });

  it('clears an optional field given null and keeps the others', async () => {
    const agent = await createAgent({ description: 'internal', firstMessage: 'Hi there' });
    const res = await patch(agent.id, { description: null });
    expect(res.statusCode).toBe(200);
    expect(res.json()).not.toHaveProperty('description');
    expect(res.json().firstMessage).toBe('Hi there');
    const got = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json();
    expect(got).not.toHaveProperty('description');
    expect((await versionRecord(agent.id, 2)).changedFields).toEqual(['description']);
  });

  it('clears a nested optional field given null', async () => {
    const agent = await createAgent({ voice: { provider: 'elevenlabs', voiceId: 'voice-1', stability: 0.4, speed: 1.2 } });
    const res = await patch(agent.id, { voice: { stability: null } });
    expect(res.statusCode).toBe(200);
    expect(res.json().voice).toEqual({ provider: 'elevenlabs', voiceId: 'voice-1', speed: 1.2 });
  });

  it('adds one to version on every PATCH and records who changed which fields', async () => {
    const agent = await createAgent();
    const first = await patch(agent.id, { voice: { stability: 0.5 } });
    expect(first.json().version).toBe(2);
    const second = await patch(agent.id, { llm: { temperature: 0.7 }, description: 'x', voice: { stability: 0.2 } });
    expect(second.json().version).toBe(3);

    const v2 = await versionRecord(agent.id, 2);
    expect(v2).toMatchObject({ version: 2, changedFields: ['voice.stability'], changesSummary: 'Changed voice.stability', createdBy: writer.id });
    expect(v2.createdBy).toMatch(/^key_/);
    const v3 = await versionRecord(agent.id, 3);
    expect(v3).toMatchObject({
      version: 3,
      changedFields: ['description', 'llm.temperature', 'voice.stability'],
      changesSummary: 'Changed description, llm.temperature, voice.stability',
      createdBy: writer.id,
    });
  });

  it('still counts a PATCH that changes no value as a new version', async () => {
    const agent = await createAgent({ description: 'same' });
    const res = await patch(agent.id, { description: 'same' });
    expect(res.statusCode).toBe(200);
    expect(res.json().version).toBe(2);
    expect(await versionRecord(agent.id, 2)).toMatchObject({ changedFields: [], changesSummary: 'No changes' });
  });

  it('answers 422 for an empty body and leaves the agent unchanged', async () => {
    const agent = await createAgent();
    const res = await patch(agent.id, {});
    expect(res.statusCode).toBe(422);
    expect(res.json().type).toMatch(/\/errors\/validation$/);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toEqual(agent);
  });

  it('answers 422 with the dotted field path for a value out of bounds, and changes nothing', async () => {
    const agent = await createAgent();
    const res = await patch(agent.id, { voice: { stability: 2 } });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().errors).toEqual([{ field: 'voice.stability', message: 'must be a number from 0 to 1' }]);
    const many = await patch(agent.id, { maxDurationSeconds: 10, llm: { temperature: 3 }, silenceDetection: { timeoutSeconds: 1 } });
    expect(many.statusCode).toBe(422);
    expect(fieldsOf(many).sort()).toEqual(['llm.temperature', 'maxDurationSeconds', 'silenceDetection.timeoutSeconds']);
    expect(many.json().errors).toContainEqual({ field: 'maxDurationSeconds', message: 'must be an integer from 30 to 3600' });
    const got = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json();
    expect(got).toEqual(agent);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}/versions`)).json().data).toHaveLength(1);
  });

  it('checks the model against the merged provider', async () => {
    const agent = await createAgent({ llm: { provider: 'openai', model: 'gpt-4o' } });
    const res = await patch(agent.id, { llm: { provider: 'anthropic' } });
    expect(res.statusCode).toBe(422);
    expect(fieldsOf(res)).toEqual(['llm.model']);
    expect(res.json().errors[0].message).toContain('claude-3-5-sonnet-20241022');
    const ok = await patch(agent.id, { llm: { provider: 'anthropic', model: 'claude-3-5-sonnet-20241022' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().llm).toEqual({ provider: 'anthropic', model: 'claude-3-5-sonnet-20241022' });
    const stt = await patch(agent.id, { transcription: { provider: 'assemblyai' } });
    expect(stt.statusCode).toBe(422);
    expect(fieldsOf(stt)).toEqual(['transcription.model']);
  });

  it('answers 422 naming a required field that a PATCH sets to null', async () => {
    const agent = await createAgent();
    const res = await patch(agent.id, { systemPromptTemplate: null });
    expect(res.statusCode).toBe(422);
    expect(fieldsOf(res)).toEqual(['systemPromptTemplate']);
    const nested = await patch(agent.id, { persona: { name: null } });
    expect(nested.statusCode).toBe(422);
    expect(fieldsOf(nested)).toEqual(['persona.name']);
    const whole = await patch(agent.id, { voice: null });
    expect(whole.statusCode).toBe(422);
    expect(fieldsOf(whole)).toEqual(['voice']);
    const stt = await patch(agent.id, { transcription: null });
    expect(stt.statusCode).toBe(422);
    expect(fieldsOf(stt)).toEqual(['transcription']);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json().version).toBe(1);
  });

  it('answers 422 naming llm when a PATCH sets the whole llm object to null', async () => {
    const agent = await createAgent();
    const res = await patch(agent.id, { llm: null });
    expect(res.statusCode).toBe(422);
    expect(res.json().type).toMatch(/\/errors\/validation$/);
    expect(fieldsOf(res)).toEqual(['llm']);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toEqual(agent);
  });

  it('answers 422 naming an unknown field, nested or not, and read-only fields', async () => {
    const agent = await createAgent();
    const nested = await patch(agent.id, { voice: { pitch: 3 } });
    expect(nested.statusCode).toBe(422);
    expect(nested.json().errors).toEqual([{ field: 'voice.pitch', message: 'is not a known field' }]);
    const top = await patch(agent.id, { colour: 'blue' });
    expect(top.statusCode).toBe(422);
    expect(top.json().errors).toEqual([{ field: 'colour', message: 'is not a known field' }]);
    const readOnly = await patch(agent.id, { status: 'active', version: 9 });
    expect(readOnly.statusCode).toBe(422);
    expect(fieldsOf(readOnly).sort()).toEqual(['status', 'version']);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toMatchObject({ status: 'draft', version: 1 });
  });

  it('answers 400 for malformed JSON', async () => {
    const agent = await createAgent();
    const res = await patch(agent.id, '{"description": ');
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toMatch(/\/errors\/malformed-request$/);
  });

  it('answers 409 when renamed to the name of another agent of the tenant, ignoring case', async () => {
    const taken = await createAgent({ name: 'Taken Name' });
    const agent = await createAgent({ name: 'Free Name' });
    const res = await patch(agent.id, { name: 'taken name' });
    expect(res.statusCode).toBe(409);
    expect(res.json().type).toMatch(/\/errors\/conflict$/);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toMatchObject({ name: 'Free Name', version: 1 });
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${taken.id}`)).json().name).toBe('Taken Name');
    const recased = await patch(agent.id, { name: 'FREE name' });
    expect(recased.statusCode).toBe(200);
    expect(recased.json().name).toBe('FREE name');
    expect((await versionRecord(agent.id, 2)).changedFields).toEqual(['name']);
  });

  it('stores a new huggingface key without ever returning it', async () => {
    const agent = await createAgent({ llm: { provider: 'huggingface', model: 'org/llama', endpointUrl: 'https://hf.example.com/v1', apiKey: 'hf_first_secret' } });
    const before = await t.database.pool.query('select llm_api_key_encrypted from agents where id = $1', [agent.id]);
    const res = await patch(agent.id, { llm: { apiKey: 'hf_second_secret' } });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('hf_second_secret');
    expect(res.json().llm).toEqual({ provider: 'huggingface', model: 'org/llama', endpointUrl: 'https://hf.example.com/v1', apiKeySet: true });
    const record = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}/versions/2`);
    expect(record.json().changedFields).toContain('llm.apiKey');
    expect(record.json().config.llm).not.toHaveProperty('apiKey');
    for (const url of [`/api/v1/agents/${agent.id}`, `/api/v1/agents/${agent.id}/versions`, `/api/v1/agents/${agent.id}/versions/1`, `/api/v1/agents/${agent.id}/versions/2`]) {
      const body = (await call(t.app, tenant.key, 'GET', url)).body;
      expect(body, url).not.toContain('hf_second_secret');
      expect(body, url).not.toContain('hf_first_secret');
    }
    const after = await t.database.pool.query('select config::text, llm_api_key_encrypted from agents where id = $1', [agent.id]);
    expect(after.rows[0].llm_api_key_encrypted).not.toBe(before.rows[0].llm_api_key_encrypted);
    expect(after.rows[0].config).not.toContain('hf_second_secret');
    const snapshots = await t.database.pool.query('select snapshot::text as s from agent_versions where agent_id = $1', [agent.id]);
    for (const row of snapshots.rows) expect(row.s).not.toContain('hf_second_secret');
  });

  it('keeps a stored huggingface key across unrelated PATCHes and drops it on null', async () => {
    const agent = await createAgent({ llm: { provider: 'huggingface', model: 'org/llama', endpointUrl: 'https://hf.example.com/v1', apiKey: 'hf_kept_secret' } });
    const kept = await patch(agent.id, { llm: { temperature: 0.4 } });
    expect(kept.statusCode).toBe(200);
    expect(kept.json().llm).toMatchObject({ apiKeySet: true, temperature: 0.4 });
    expect((await versionRecord(agent.id, 2)).changedFields).toEqual(['llm.temperature']);
    const dropped = await patch(agent.id, { llm: { apiKey: null } });
    expect(dropped.statusCode).toBe(200);
    expect(dropped.json().llm).not.toHaveProperty('apiKeySet');
    expect((await versionRecord(agent.id, 3)).changedFields).toEqual(['llm.apiKey']);
  });

  it('drops the huggingface endpoint and key when the provider changes away from huggingface', async () => {
    const agent = await createAgent({ llm: { provider: 'huggingface', model: 'org/llama', endpointUrl: 'https://hf.example.com/v1', apiKey: 'hf_old_secret' } });
    const res = await patch(agent.id, { llm: { provider: 'openai', model: 'gpt-4o' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().llm).toEqual({ provider: 'openai', model: 'gpt-4o' });
    expect((await versionRecord(agent.id, 2)).changedFields).toEqual(['llm.apiKey', 'llm.endpointUrl', 'llm.model', 'llm.provider']);
    const { rows } = await t.database.pool.query('select llm_api_key_encrypted from agents where id = $1', [agent.id]);
    expect(rows[0].llm_api_key_encrypted).toBeNull();
  });

  it('refuses an apiKey for a provider other than huggingface', async () => {
    const agent = await createAgent();
    const res = await patch(agent.id, { llm: { apiKey: 'sk_not_allowed' } });
    expect(res.statusCode).toBe(422);
    expect(fieldsOf(res)).toEqual(['llm.apiKey']);
    expect(res.body).not.toContain('sk_not_allowed');
  });

  it('gives two concurrent PATCHes consecutive versions and keeps both changes', async () => {
    const agent = await createAgent();
    const [a, b] = await Promise.all([patch(agent.id, { voice: { stability: 0.1 } }), patch(agent.id, { llm: { temperature: 0.9 } })]);
    expect(a!.statusCode).toBe(200);
    expect(b!.statusCode).toBe(200);
    expect([a!.json().version, b!.json().version].sort()).toEqual([2, 3]);
    const got = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json();
    expect(got.version).toBe(3);
    expect(got.voice.stability).toBe(0.1);
    expect(got.llm.temperature).toBe(0.9);
    const versions = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}/versions`)).json().data;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
  });

  it('announces the change on the bus with the new version', async () => {
    const agent = await createAgent();
    const seen: BusMessage<'agentChanged'>[] = [];
    const sub = bus.subscribe('agentChanged', 'agent.*.*.changed', (msg) => {
      if (msg.payload.agentId === agent.id) seen.push(msg);
    });
    try {
      expect((await patch(agent.id, { description: 'announced' })).statusCode).toBe(200);
      await vi.waitFor(() => expect(seen.some((m) => m.payload.change === 'updated')).toBe(true));
      const msg = seen.find((m) => m.payload.change === 'updated')!;
      expect(msg.subject).toBe(`agent.${tenant.tenantId}.${agent.id}.changed`);
      expect(msg.payload).toMatchObject({ tenantId: tenant.tenantId, agentId: agent.id, version: 2, change: 'updated' });
    } finally {
      await sub.close();
    }
  });

  it('answers 404 for an unknown agent', async () => {
    const res = await patch(newId('agt'), { description: 'x' });
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/not-found$/);
  });

  it('needs agents:write (403) and a credential (401)', async () => {
    const agent = await createAgent();
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const forbidden = await patch(agent.id, { description: 'x' }, readOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:write');
    expect((await call(t.app, null, 'PATCH', `/api/v1/agents/${agent.id}`, { description: 'x' })).statusCode).toBe(401);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toEqual(agent);
  });
});
