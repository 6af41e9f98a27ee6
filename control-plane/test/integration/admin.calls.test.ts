import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { conversationMessages, conversations } from '../../src/db/schema/conversations.js';
import type { ConversationStatus } from '../../src/db/schema/conversations.js';
import { createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { adminCall, createAdminApp } from '../admin-fixtures.js';

let t: TestApp;
let tenant: TestTenant;
let admin: FastifyInstance;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  admin = await createAdminApp(t.database, { APP_ENV: 'production' });
});
afterAll(async () => {
  await admin.close();
  await t.close();
});

const callSid = () => `CA${randomBytes(16).toString('hex')}`;

async function insertConversation(values: { externalId: string; channel: string; status: ConversationStatus; outcome?: string | null; ended?: boolean; messages?: number; provider?: string }) {
  const id = newId('conv');
  const startedAt = new Date('2025-03-01T10:00:00.000Z');
  await t.database.db.insert(conversations).values({
    id,
    tenantId: tenant.tenantId,
    agentId: 'agt_00000000000000000000000001',
    agentName: 'Inspector agent',
    agentVersion: 1,
    channel: values.channel,
    status: values.status,
    direction: 'inbound',
    provider: values.provider ?? 'twilio',
    externalId: values.externalId,
    callerPhone: '+15551230001',
    startedAt,
    ...(values.ended ? { endedAt: new Date('2025-03-01T10:02:05.000Z'), durationSeconds: 125, costTotalUsd: 0.1234 } : {}),
    outcome: values.outcome ?? null,
  });
  for (let seq = 0; seq < (values.messages ?? 0); seq++) {
    await t.database.db.insert(conversationMessages).values({
      id: newId('msg'),
      conversationId: id,
      seq,
      role: seq % 2 === 0 ? 'agent' : 'user',
      content: `message ${seq}`,
      source: 'test',
      durationMs: 1000,
      timestamp: new Date(startedAt.getTime() + seq * 1000),
    });
  }
  return id;
}

describe('GET /api/v1/telephony/debug/calls/{callSid}', () => {
  it('answers 404 {callSid, message} (not a problem document) when nothing matches', async () => {
    const sid = callSid();
    const res = await adminCall(admin, 'GET', `/api/v1/telephony/debug/calls/${sid}`);
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ callSid: sid, message: expect.stringContaining(sid) });
  });

  it('finds a completed phone conversation by its provider call id, with capitalised values', async () => {
    const sid = callSid();
    const id = await insertConversation({ externalId: sid, channel: 'phone', status: 'completed', outcome: 'callback_scheduled', ended: true, messages: 3 });
    const res = await adminCall(admin, 'GET', `/api/v1/telephony/debug/calls/${sid}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      callSid: sid,
      conversation: {
        id,
        tenantId: tenant.tenantId,
        agentId: 'agt_00000000000000000000000001',
        channel: 'Voice',
        status: 'Completed',
        startedAt: '2025-03-01T10:00:00.000Z',
        endedAt: '2025-03-01T10:02:05.000Z',
        durationSeconds: 125,
        callerIdentifier: '+15551230001',
        outcome: 'CallbackScheduled',
        costTotal: 0.1234,
        messageCount: 3,
      },
      outboundCall: null,
      carrierEvents: [],
    });
  });

  it('shows an in-progress web call with nulls for what is not known yet', async () => {
    const sid = `web-${randomBytes(6).toString('hex')}`;
    await insertConversation({ externalId: sid, channel: 'webrtc', status: 'in_progress', provider: 'webrtc' });
    const res = await adminCall(admin, 'GET', `/api/v1/telephony/debug/calls/${sid}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().conversation).toMatchObject({ channel: 'Web', status: 'InProgress', endedAt: null, durationSeconds: null, outcome: null, costTotal: null, messageCount: 0 });
  });

  it('capitalises the other statuses and outcomes the same way', async () => {
    for (const [status, outcome, want] of [
      ['failed', 'unresolved', ['Failed', 'Unresolved']],
      ['abandoned', 'abandoned', ['Abandoned', 'Abandoned']],
      ['completed', 'resolved', ['Completed', 'Resolved']],
    ] as const) {
      const sid = callSid();
      await insertConversation({ externalId: sid, channel: 'phone', status, outcome, ended: true });
      const conv = (await adminCall(admin, 'GET', `/api/v1/telephony/debug/calls/${sid}`)).json().conversation;
      expect([conv.status, conv.outcome]).toEqual(want);
    }
  });
});
