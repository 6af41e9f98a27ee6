import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { BusMessage } from '@vap/shared';
import { call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let bus: InProcessBus;
let tenant: TestTenant;

beforeAll(async () => {
  bus = new InProcessBus();
  t = await createTestApp({ bus });
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

const createAgent = (overrides: Record<string, unknown> = {}) => createAgentFor(t.app, tenant.key, overrides);

async function patch(id: string, body: unknown) {
  const res = await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${id}`, body);
  expect(res.statusCode).toBe(200);
  return res.json();
}

function publish(id: string, body?: unknown, key = tenant.key, headers: Record<string, string> = {}) {
  return call(t.app, key, 'POST', `/api/v1/agents/${id}/publish`, body, headers);
}

async function versionRecord(id: string, n: number) {
  const res = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${id}/versions/${n}`);
  expect(res.statusCode).toBe(200);
  return res.json();
}

describe('POST /api/v1/agents/{agentId}/publish', () => {
  it('marks the current version published, with its notes, and returns the agent', async () => {
    const agent = await createAgent();
    await patch(agent.id, { description: 'v2' });
    await patch(agent.id, { description: 'v3' });
    const res = await publish(agent.id, { notes: 'Ready for launch' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: agent.id, version: 3, publishedVersion: 3, status: 'draft', description: 'v3' });
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json().publishedVersion).toBe(3);

    const v3 = await versionRecord(agent.id, 3);
    expect(v3.publishNotes).toBe('Ready for launch');
    expect(new Date(v3.publishedAt).toISOString()).toBe(v3.publishedAt);
    const v2 = await versionRecord(agent.id, 2);
    expect(v2).not.toHaveProperty('publishedAt');
    expect(v2).not.toHaveProperty('publishNotes');
    const list = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}/versions`)).json().data;
    expect(list.map((v: { publishedAt?: string }) => v.publishedAt !== undefined)).toEqual([true, false, false]);
  });

  it('takes no body at all, and then records no notes', async () => {
    const agent = await createAgent();
    const res = await publish(agent.id);
    expect(res.statusCode).toBe(200);
    expect(res.json().publishedVersion).toBe(1);
    const v1 = await versionRecord(agent.id, 1);
    expect(v1.publishedAt).toEqual(expect.any(String));
    expect(v1).not.toHaveProperty('publishNotes');
    const empty = await publish((await createAgent()).id, {});
    expect(empty.statusCode).toBe(200);
    expect(empty.json().publishedVersion).toBe(1);
  });

  it('keeps the first publishedAt and the notes when the same version is published again without notes', async () => {
    const agent = await createAgent();
    expect((await publish(agent.id, { notes: 'first release' })).statusCode).toBe(200);
    const first = await versionRecord(agent.id, 1);
    await new Promise((r) => setTimeout(r, 20));
    expect((await publish(agent.id)).statusCode).toBe(200);
    const again = await versionRecord(agent.id, 1);
    expect(again.publishNotes).toBe('first release');
    expect(again.publishedAt).toBe(first.publishedAt);
    expect((await publish(agent.id, { notes: 'hotfix notes' })).statusCode).toBe(200);
    expect((await versionRecord(agent.id, 1)).publishNotes).toBe('hotfix notes');
  });

  it('does not change status or version', async () => {
    const agent = await createAgent();
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`);
    const res = await publish(agent.id, { notes: 'n' });
    expect(res.json()).toMatchObject({ status: 'active', version: 1, publishedVersion: 1 });
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}/versions`)).json().data).toHaveLength(1);
  });

  it('keeps publishedVersion through later PATCHes until published again', async () => {
    const agent = await createAgent();
    expect((await publish(agent.id, { notes: 'first' })).json().publishedVersion).toBe(1);
    const patched = await patch(agent.id, { voice: { stability: 0.3 } });
    expect(patched).toMatchObject({ version: 2, publishedVersion: 1 });
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json().publishedVersion).toBe(1);
    const again = await publish(agent.id, { notes: 'second' });
    expect(again.json()).toMatchObject({ version: 2, publishedVersion: 2 });
    const v1 = await versionRecord(agent.id, 1);
    const v2 = await versionRecord(agent.id, 2);
    expect(v1).toMatchObject({ publishNotes: 'first', publishedAt: expect.any(String) });
    expect(v2).toMatchObject({ publishNotes: 'second', publishedAt: expect.any(String) });
  });

  it('answers 422 naming the field for notes that are too long or an unknown field', async () => {
    const agent = await createAgent();
    const long = await publish(agent.id, { notes: 'x'.repeat(2001) });
    expect(long.statusCode).toBe(422);
    expect(long.json().errors).toEqual([{ field: 'notes', message: 'must be at most 2000 characters' }]);
    const unknown = await publish(agent.id, { note: 'typo' });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().errors).toEqual([{ field: 'note', message: 'is not a known field' }]);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json().publishedVersion).toBeNull();
  });

  it('replays the first response for a repeated Idempotency-Key without publishing again', async () => {
    const agent = await createAgent();
    const headers = { 'idempotency-key': `pub-${agent.id}` };
    const first = await publish(agent.id, { notes: 'once' }, tenant.key, headers);
    expect(first.statusCode).toBe(200);
    await patch(agent.id, { description: 'v2' });
    const replay = await publish(agent.id, { notes: 'once' }, tenant.key, headers);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json()).toMatchObject({ version: 2, publishedVersion: 1 });
  });

  it('announces the publication on the bus', async () => {
    const agent = await createAgent();
    const seen: BusMessage<'agentChanged'>[] = [];
    const sub = bus.subscribe('agentChanged', 'agent.*.*.changed', (msg) => {
      if (msg.payload.agentId === agent.id) seen.push(msg);
    });
    try {
      await patch(agent.id, { description: 'v2' });
      expect((await publish(agent.id)).statusCode).toBe(200);
      await vi.waitFor(() => expect(seen.map((m) => m.payload.change)).toContain('published'));
      expect(seen.find((m) => m.payload.change === 'published')!.payload).toMatchObject({ tenantId: tenant.tenantId, agentId: agent.id, version: 2 });
    } finally {
      await sub.close();
    }
  });

  it('answers 404 for an unknown agent', async () => {
    const res = await publish(newId('agt'), { notes: 'x' });
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/not-found$/);
  });

  it('needs agents:write (403) and a credential (401), and then publishes nothing', async () => {
    const agent = await createAgent();
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const forbidden = await publish(agent.id, { notes: 'x' }, readOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:write');
    expect((await call(t.app, null, 'POST', `/api/v1/agents/${agent.id}/publish`)).statusCode).toBe(401);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json().publishedVersion).toBeNull();
  });
});
