import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { agentOf, numbersWorld, provisioned } from '../telephony-numbers-fixtures.js';

const w = numbersWorld();
const list = (query = '', key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/telephony/numbers${query}`);
let agent: { id: string; name: string };
const mine: Record<string, string> = {};

/** Four numbers of the tenant (one assigned, one released) and one of the other tenant. */
beforeAll(async () => {
  agent = await agentOf(w);
  for (const phoneNumber of ['+14155550100', '+12125550100', '+18005550100', '+13125550100']) mine[phoneNumber] = (await provisioned(w, phoneNumber)).id;
  expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/telephony/numbers/${mine['+12125550100']}/assign/${agent.id}`)).statusCode).toBe(200);
  expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/telephony/numbers/${mine['+13125550100']}`)).statusCode).toBe(204);
  await provisioned(w, '+14155550101', 'twilio', w.other.key);
});

describe('GET /api/v1/telephony/numbers', () => {
  it("lists the tenant's active numbers, newest first, with the assigned agent's name", async () => {
    const res = await list();
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ page: 1, pageSize: 20, total: 3, totalPages: 1 });
    expect(body.data.map((n: { phoneNumber: string }) => n.phoneNumber)).toEqual(['+18005550100', '+12125550100', '+14155550100']);
    const assigned = body.data.find((n: { phoneNumber: string }) => n.phoneNumber === '+12125550100');
    expect(assigned).toMatchObject({ id: mine['+12125550100'], assignedAgentId: agent.id, assignedAgentName: agent.name, status: 'active', provider: 'twilio' });
    const free = body.data.find((n: { phoneNumber: string }) => n.phoneNumber === '+18005550100');
    expect(free).toMatchObject({ assignedAgentId: null, assignedAgentName: null, monthlyCostUsd: 2.15 });
  });

  it('lists released numbers with status=released', async () => {
    const res = await list('?status=released');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual([expect.objectContaining({ id: mine['+13125550100'], status: 'released', releasedAt: expect.any(String), assignedAgentId: null })]);
  });

  it('sorts and pages', async () => {
    const byNumber = await list('?sortBy=phoneNumber&sortOrder=asc&pageSize=2');
    expect(byNumber.json()).toMatchObject({ pageSize: 2, total: 3, totalPages: 2 });
    expect(byNumber.json().data.map((n: { phoneNumber: string }) => n.phoneNumber)).toEqual(['+12125550100', '+14155550100']);
    const page2 = await list('?sortBy=phoneNumber&sortOrder=asc&pageSize=2&page=2');
    expect(page2.json().data.map((n: { phoneNumber: string }) => n.phoneNumber)).toEqual(['+18005550100']);
    const byCost = await list('?sortBy=monthlyCostUsd&sortOrder=desc');
    expect(byCost.json().data[0].phoneNumber).toBe('+18005550100');
  });

  it("never shows another tenant's numbers", async () => {
    const res = await list('', w.other.key);
    expect(res.json().data.map((n: { phoneNumber: string }) => n.phoneNumber)).toEqual(['+14155550101']);
  });

  it.each([
    ['?sortBy=tenantId', 'sortBy'],
    ['?status=deleted', 'status'],
    ['?pageSize=101', 'pageSize'],
    ['?provider=twilio', 'provider'],
  ])('answers 422 naming the field for %s', async (query, field) => {
    const res = await list(query);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('answers 401 without credentials and 403 without telephony:read', async () => {
    expect((await list('', '')).statusCode).toBe(401);
    const noRead = await w.tenant.mintKey({ scopes: ['agents:read'] });
    expect((await list('', noRead.key)).statusCode).toBe(403);
  });
});
