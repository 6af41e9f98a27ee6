import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, NatsBus } from '@vap/shared';
import type { Bus } from '@vap/shared';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest, publishEnded, publishMessage, recordEvents, startCalls, waitForRow } from './calls.fixtures.js';

/** Test files share one NATS server: this file's subjects are its own. */
const SUBJECT_PREFIX = `tcr${process.pid}${Date.now().toString(36)}`;

const natsUrl = process.env.TEST_NATS_URL;

/** Two control planes (app + call handlers, each with its own pool) on one database and one bus. */
interface Replicas {
  apps: TestApp[];
  handlers: CallHandling[];
  gateway: Bus;
  tenant: TestTenant;
  close(): Promise<void>;
}

async function startReplicas(busFor: (name: string) => Promise<Bus>): Promise<Replicas> {
  const apps = [await createTestApp({ bus: await busFor('cp-1') }), await createTestApp({ bus: await busFor('cp-2') })];
  const handlers = apps.map((a) => startCalls(a.database.db, a.bus));
  const gateway = await busFor('gateway');
  const tenant = await createTenant(apps[0]!.database);
  return {
    apps,
    handlers,
    gateway,
    tenant,
    close: async () => {
      for (const h of handlers) await h.close();
      for (const a of apps) await a.close();
      const buses = new Set([...apps.map((a) => a.bus), gateway]);
      for (const b of buses) await b.close();
    },
  };
}

/**
 * A whole call as a gateway drives it: prepare (retried), live messages, the end record
 * (sent twice). Every step lands on one replica of the queue group; the result must be one
 * conversation, every message once, one SessionStarted and one SessionEnded.
 */
async function runCall(r: Replicas): Promise<void> {
  const [cp1, cp2] = r.apps as [TestApp, TestApp];
  const agent = await activeAgent(cp1.app, r.tenant.key);
  const events = recordEvents(r.gateway, r.tenant.tenantId);
  if (r.gateway instanceof NatsBus) await r.gateway.flush();
  try {
    const req = prepareRequest(r.tenant.tenantId, agent.id);
    const first = await prepareCall(r.gateway, req);
    const retry = await prepareCall(r.gateway, req);
    expect(retry.conversationId).toBe(first.conversationId);
    const id = first.conversationId;

    const messages = [0, 1, 2, 3].map((seq) => message(seq));
    for (const m of messages) await publishMessage(r.gateway, r.tenant.tenantId, id, m);
    const rec = endedRecord(r.tenant.tenantId, agent.id, id, messages);
    await publishEnded(r.gateway, rec);
    await publishEnded(r.gateway, rec);

    await waitForRow(cp2.database.pool, id, (row) => expect(row.status).toBe('completed'));
    const { rows } = await cp2.database.pool.query('select count(*)::int as n from conversations where external_id = $1', [req.callSid]);
    expect(rows[0].n).toBe(1);
    const res = await call(cp2.app, r.tenant.key, 'GET', `/api/v1/conversations/${id}/messages`);
    expect(res.json().messages.map((m: { id: string }) => m.id)).toEqual(messages.map((m) => m.id));

    await vi.waitFor(() => expect(events.of(id).map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']), { timeout: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events.of(id)).toHaveLength(2);
  } finally {
    await events.close();
  }
}

describe('two control planes on the in-process bus', () => {
  let r: Replicas;
  beforeAll(async () => {
    const bus = new InProcessBus();
    r = await startReplicas(async () => bus);
  });
  afterAll(async () => r.close());

  it('store a call once and emit one SessionStarted and one SessionEnded', async () => {
    await runCall(r);
  });
});

describe.skipIf(!natsUrl)('two control planes over NATS', () => {
  let r: Replicas;
  beforeAll(async () => {
    r = await startReplicas((name) => NatsBus.connect(natsUrl!, { name, subjectPrefix: SUBJECT_PREFIX }));
  });
  afterAll(async () => r.close());

  it('store a call once and emit one SessionStarted and one SessionEnded', async () => {
    await runCall(r);
  });
});
