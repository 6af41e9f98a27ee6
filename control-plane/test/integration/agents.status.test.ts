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

function action(id: string, verb: 'activate' | 'deactivate', key = tenant.key) {
  return call(t.app, key, 'POST', `/api/v1/agents/${id}/${verb}`);
}

async function statusOf(id: string): Promise<string> {
  return (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${id}`)).json().status;
}

describe('POST /api/v1/agents/{agentId}/activate and /deactivate', () => {
  it('activates a draft and returns the agent, version unchanged', async () => {
    const agent = await createAgent();
    expect(agent.status).toBe('draft');
    const res = await action(agent.id, 'activate');
    expect(res.statusCode).toBe(200);
    const { status, updatedAt: _u1, ...rest } = res.json();
    const { status: _s, updatedAt: _u2, ...before } = agent;
    expect(status).toBe('active');
    expect(rest).toEqual(before);
    expect(res.json().version).toBe(1);
    expect(await statusOf(agent.id)).toBe('active');
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}/versions`)).json().data).toHaveLength(1);
  });

  it('treats activating an active agent as a no-op', async () => {
    const agent = await createAgent();
    const first = (await action(agent.id, 'activate')).json();
    const again = await action(agent.id, 'activate');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first);
  });

  it('deactivates an active agent, and re-activates an inactive one', async () => {
    const agent = await createAgent();
    expect((await action(agent.id, 'activate')).statusCode).toBe(200);
    const off = await action(agent.id, 'deactivate');
    expect(off.statusCode).toBe(200);
    expect(off.json()).toMatchObject({ id: agent.id, status: 'inactive', version: 1 });
    expect(await statusOf(agent.id)).toBe('inactive');
    const on = await action(agent.id, 'activate');
    expect(on.statusCode).toBe(200);
    expect(on.json().status).toBe('active');
    expect(await statusOf(agent.id)).toBe('active');
  });

  it('treats deactivating an inactive agent as a no-op', async () => {
    const agent = await createAgent();
    await action(agent.id, 'activate');
    const first = (await action(agent.id, 'deactivate')).json();
    const again = await action(agent.id, 'deactivate');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first);
    expect(again.json().status).toBe('inactive');
  });

  it('answers 409 invalid-state when deactivating a draft, which stays a draft', async () => {
    const agent = await createAgent();
    const res = await action(agent.id, 'deactivate');
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().type).toMatch(/\/errors\/invalid-state$/);
    expect(await statusOf(agent.id)).toBe('draft');
  });

  it('keeps the status across a PATCH', async () => {
    const agent = await createAgent();
    await action(agent.id, 'activate');
    const patched = await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${agent.id}`, { description: 'still on' });
    expect(patched.json()).toMatchObject({ status: 'active', version: 2 });
  });

  it('announces real status changes on the bus, but not no-ops', async () => {
    const agent = await createAgent();
    const seen: BusMessage<'agentChanged'>[] = [];
    const sub = bus.subscribe('agentChanged', 'agent.*.*.changed', (msg) => {
      if (msg.payload.agentId === agent.id) seen.push(msg);
    });
    try {
      await action(agent.id, 'activate');
      await action(agent.id, 'activate');
      await action(agent.id, 'deactivate');
      await vi.waitFor(() => expect(seen).toHaveLength(2));
      expect(seen.map((m) => m.payload)).toEqual([
        expect.objectContaining({ tenantId: tenant.tenantId, agentId: agent.id, change: 'status', version: 1 }),
        expect.objectContaining({ tenantId: tenant.tenantId, agentId: agent.id, change: 'status', version: 1 }),
      ]);
      // Anything from the no-op would have been queued before the deactivation's message.
      await new Promise((r) => setTimeout(r, 20));
      expect(seen).toHaveLength(2);
    } finally {
      await sub.close();
    }
  });

  it('answers 404 for an unknown agent', async () => {
    for (const verb of ['activate', 'deactivate'] as const) {
      const res = await action(newId('agt'), verb);
      expect(res.statusCode, verb).toBe(404);
      expect(res.json().type).toMatch(/\/errors\/not-found$/);
    }
  });

  it('needs agents:write (403) and a credential (401), and then changes nothing', async () => {
    const agent = await createAgent();
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    for (const verb of ['activate', 'deactivate'] as const) {
      const res = await action(agent.id, verb, readOnly.key);
      expect(res.statusCode, verb).toBe(403);
      expect(res.json().detail).toContain('agents:write');
      expect((await call(t.app, null, 'POST', `/api/v1/agents/${agent.id}/${verb}`)).statusCode).toBe(401);
    }
    expect(await statusOf(agent.id)).toBe('draft');
  });
});
