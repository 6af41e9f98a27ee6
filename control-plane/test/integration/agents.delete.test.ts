import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { BusMessage } from '@vap/shared';
import { agentBody, call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
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

describe('DELETE /api/v1/agents/{agentId}', () => {
  it('answers 204 with an empty body, after which the agent and its versions are gone', async () => {
    const agent = await createAgent();
    expect((await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${agent.id}`, { description: 'v2' })).statusCode).toBe(200);
    const res = await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    for (const url of [`/api/v1/agents/${agent.id}`, `/api/v1/agents/${agent.id}/versions`, `/api/v1/agents/${agent.id}/versions/1`, `/api/v1/agents/${agent.id}/versions/2`]) {
      const gone = await call(t.app, tenant.key, 'GET', url);
      expect(gone.statusCode, url).toBe(404);
      expect(gone.json().type, url).toMatch(/\/errors\/not-found$/);
    }
    const { rows } = await t.database.pool.query('select count(*)::int as n from agent_versions where agent_id = $1', [agent.id]);
    expect(rows[0].n).toBe(0);
  });

  it('removes only that agent: it leaves the list and the other agents stay', async () => {
    const doomed = await createAgent();
    const kept = await createAgent();
    const before = (await call(t.app, tenant.key, 'GET', '/api/v1/agents?pageSize=100')).json();
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${doomed.id}`)).statusCode).toBe(204);
    const after = (await call(t.app, tenant.key, 'GET', '/api/v1/agents?pageSize=100')).json();
    expect(after.total).toBe(before.total - 1);
    const ids = after.data.map((a: { id: string }) => a.id);
    expect(ids).not.toContain(doomed.id);
    expect(ids).toContain(kept.id);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${kept.id}`)).json()).toEqual(kept);
  });

  it('deletes an active, published agent too', async () => {
    const agent = await createAgent();
    expect((await call(t.app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`)).statusCode).toBe(200);
    expect((await call(t.app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/publish`)).statusCode).toBe(200);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`)).statusCode).toBe(204);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).statusCode).toBe(404);
  });

  it('frees the name for a new agent', async () => {
    const agent = await createAgent({ name: 'Recycled name' });
    expect((await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name: 'recycled NAME' }))).statusCode).toBe(409);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`)).statusCode).toBe(204);
    const again = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name: 'Recycled name' }));
    expect(again.statusCode).toBe(201);
    expect(again.json().id).not.toBe(agent.id);
  });

  it('answers 404 for a second delete and for an unknown id', async () => {
    const agent = await createAgent();
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`)).statusCode).toBe(204);
    const again = await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`);
    expect(again.statusCode).toBe(404);
    expect(again.json().type).toMatch(/\/errors\/not-found$/);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${newId('agt')}`)).statusCode).toBe(404);
  });

  it('announces the deletion on the bus with a null version', async () => {
    const agent = await createAgent();
    const seen: BusMessage<'agentChanged'>[] = [];
    const sub = bus.subscribe('agentChanged', 'agent.*.*.changed', (msg) => {
      if (msg.payload.agentId === agent.id) seen.push(msg);
    });
    try {
      expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`)).statusCode).toBe(204);
      await vi.waitFor(() => expect(seen.map((m) => m.payload.change)).toContain('deleted'));
      const msg = seen.find((m) => m.payload.change === 'deleted')!;
      expect(msg.subject).toBe(`agent.${tenant.tenantId}.${agent.id}.changed`);
      expect(msg.payload).toMatchObject({ tenantId: tenant.tenantId, agentId: agent.id, version: null });
    } finally {
      await sub.close();
    }
  });

  it('needs agents:write (403) and a credential (401), and then deletes nothing', async () => {
    const agent = await createAgent();
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const forbidden = await call(t.app, readOnly.key, 'DELETE', `/api/v1/agents/${agent.id}`);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:write');
    expect((await call(t.app, null, 'DELETE', `/api/v1/agents/${agent.id}`)).statusCode).toBe(401);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).statusCode).toBe(200);
  });
});
