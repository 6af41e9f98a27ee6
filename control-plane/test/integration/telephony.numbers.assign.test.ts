import { beforeAll, describe, expect, it } from 'vitest';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { call } from '../helpers.js';
import { postTwilio, voiceParams } from '../telephony-fixtures.js';
import { agentOf, numbersWorld, provisioned } from '../telephony-numbers-fixtures.js';
import { child, parseXml } from '../xml.js';

const w = numbersWorld();
const assign = (numberId: string, agentId: string, key = w.tenant.key, headers: Record<string, string> = {}) =>
  call(w.t.app, key, 'POST', `/api/v1/telephony/numbers/${numberId}/assign/${agentId}`, undefined, headers);
let a: { id: string; name: string };
let b: { id: string; name: string };

beforeAll(async () => {
  a = await agentOf(w);
  b = await agentOf(w);
  for (const agent of [a, b]) expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`)).statusCode).toBe(200);
});

describe('POST /api/v1/telephony/numbers/{numberId}/assign/{agentId}', () => {
  it('assigns the number and answers it; inbound calls then stream to that agent', async () => {
    const n = await provisioned(w, '+14155550100');
    const res = await assign(n.id, a.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: n.id, phoneNumber: '+14155550100', assignedAgentId: a.id, status: 'active' });
    const answer = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+14155550100'));
    const stream = child(child(parseXml(answer.body), 'Connect'), 'Stream');
    expect(stream.attrs.url).toContain(`agentId=${a.id}`);
  });

  it('answers 200 without change when assigned again to the same agent', async () => {
    const n = await provisioned(w, '+14155550101');
    expect((await assign(n.id, a.id)).statusCode).toBe(200);
    const again = await assign(n.id, a.id);
    expect(again.statusCode).toBe(200);
    expect(again.json().assignedAgentId).toBe(a.id);
  });

  it('answers 409 when the number is assigned to another agent, and keeps the first assignment', async () => {
    const n = await provisioned(w, '+14155550102');
    expect((await assign(n.id, a.id)).statusCode).toBe(200);
    const res = await assign(n.id, b.id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/conflict$/), detail: expect.stringContaining(a.id) });
    const [row] = (await w.t.database.pool.query('select assigned_agent_id from phone_numbers where id = $1', [n.id])).rows;
    expect(row.assigned_agent_id).toBe(a.id);
  });

  it('lets exactly one of two concurrent assignments to different agents win', async () => {
    const n = await provisioned(w, '+14155550103');
    const results = await Promise.all([assign(n.id, a.id), assign(n.id, b.id)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const winner = results.find((r) => r.statusCode === 200)!.json().assignedAgentId;
    const [row] = (await w.t.database.pool.query('select assigned_agent_id from phone_numbers where id = $1', [n.id])).rows;
    expect(row.assigned_agent_id).toBe(winner);
  });

  it("answers 404 for an agent of another tenant, a missing agent and another tenant's number", async () => {
    const n = await provisioned(w, '+14155550104');
    const foreignAgent = await agentOf(w, w.other.key);
    const cross = await assign(n.id, foreignAgent.id);
    expect(cross.statusCode).toBe(404);
    expect(cross.json().detail).toContain(foreignAgent.id);
    expect((await assign(n.id, 'agt_00000000000000000000000000')).statusCode).toBe(404);
    expect((await assign(n.id, a.id, w.other.key)).statusCode).toBe(404);
    expect((await assign('num_00000000000000000000000000', a.id)).statusCode).toBe(404);
    const [row] = (await w.t.database.pool.query('select assigned_agent_id from phone_numbers where id = $1', [n.id])).rows;
    expect(row.assigned_agent_id).toBeNull();
  });

  it('answers 404 for a released number', async () => {
    const n = await provisioned(w, '+14155550105');
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/telephony/numbers/${n.id}`)).statusCode).toBe(204);
    expect((await assign(n.id, a.id)).statusCode).toBe(404);
    const answer = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+14155550105'));
    expect(child(parseXml(answer.body), 'Say').text).toBe(APOLOGY_TEXT);
  });

  it('replays the answer for the same Idempotency-Key', async () => {
    const n = await provisioned(w, '+14155550106');
    const first = await assign(n.id, a.id, w.tenant.key, { 'idempotency-key': 'assign-0106' });
    const replay = await assign(n.id, a.id, w.tenant.key, { 'idempotency-key': 'assign-0106' });
    expect(first.statusCode).toBe(200);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it("deleting the agent leaves its number active and unassigned, and calls to it get the apology", async () => {
    const doomed = await agentOf(w);
    expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/agents/${doomed.id}/activate`)).statusCode).toBe(200);
    const n = await provisioned(w, '+12125550100');
    expect((await assign(n.id, doomed.id)).statusCode).toBe(200);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/agents/${doomed.id}`)).statusCode).toBe(204);
    const listed = (await call(w.t.app, w.tenant.key, 'GET', '/api/v1/telephony/numbers?pageSize=100')).json().data.find((x: { id: string }) => x.id === n.id);
    expect(listed).toMatchObject({ status: 'active', assignedAgentId: null, assignedAgentName: null });
    const answer = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+12125550100'));
    expect(child(parseXml(answer.body), 'Say').text).toBe(APOLOGY_TEXT);
    // The number is free for another agent.
    expect((await assign(n.id, b.id)).statusCode).toBe(200);
  });

  it('answers 401 without credentials and 403 without telephony:write', async () => {
    const n = await provisioned(w, '+14155550107');
    expect((await assign(n.id, a.id, '')).statusCode).toBe(401);
    const readOnly = await w.tenant.mintKey({ scopes: ['telephony:read', 'agents:write'] });
    expect((await assign(n.id, a.id, readOnly.key)).statusCode).toBe(403);
  });
});
