import { beforeAll, describe, expect, it } from 'vitest';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { call } from '../helpers.js';
import { postTwilio, voiceParams } from '../telephony-fixtures.js';
import { agentOf, numbersWorld, provisioned } from '../telephony-numbers-fixtures.js';
import { child, parseXml } from '../xml.js';

const w = numbersWorld();
const unassign = (numberId: string, key = w.tenant.key) => call(w.t.app, key, 'POST', `/api/v1/telephony/numbers/${numberId}/unassign`);
let agent: { id: string };

beforeAll(async () => {
  agent = await agentOf(w);
  expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`)).statusCode).toBe(200);
});

async function assignedNumber(phoneNumber: string): Promise<string> {
  const n = await provisioned(w, phoneNumber);
  expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/telephony/numbers/${n.id}/assign/${agent.id}`)).statusCode).toBe(200);
  return n.id;
}

describe('POST /api/v1/telephony/numbers/{numberId}/unassign', () => {
  it('clears the agent and answers the number; its calls then get the apology', async () => {
    const id = await assignedNumber('+14155550100');
    const res = await unassign(id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, assignedAgentId: null, status: 'active' });
    const answer = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+14155550100'));
    expect(child(parseXml(answer.body), 'Say').text).toBe(APOLOGY_TEXT);
    const listed = (await call(w.t.app, w.tenant.key, 'GET', '/api/v1/telephony/numbers')).json().data.find((n: { id: string }) => n.id === id);
    expect(listed).toMatchObject({ assignedAgentId: null, assignedAgentName: null });
  });

  it('answers 200 for a number without an agent', async () => {
    const n = await provisioned(w, '+14155550101');
    const res = await unassign(n.id);
    expect(res.statusCode).toBe(200);
    expect(res.json().assignedAgentId).toBeNull();
  });

  it("answers 404 for another tenant's number, a missing one and a released one", async () => {
    const id = await assignedNumber('+14155550102');
    expect((await unassign(id, w.other.key)).statusCode).toBe(404);
    const [row] = (await w.t.database.pool.query('select assigned_agent_id from phone_numbers where id = $1', [id])).rows;
    expect(row.assigned_agent_id).toBe(agent.id);
    expect((await unassign('num_00000000000000000000000000')).statusCode).toBe(404);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/telephony/numbers/${id}`)).statusCode).toBe(204);
    expect((await unassign(id)).statusCode).toBe(404);
  });

  it('answers 401 without credentials and 403 without telephony:write', async () => {
    const id = await assignedNumber('+14155550103');
    expect((await unassign(id, '')).statusCode).toBe(401);
    const readOnly = await w.tenant.mintKey({ scopes: ['telephony:read'] });
    expect((await unassign(id, readOnly.key)).statusCode).toBe(403);
  });
});
