import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { NatsBus, SUBJECTS } from '@vap/shared';
import type { BusMessage } from '@vap/shared';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

/** Test files share one NATS server: this file's subjects are its own. */
const SUBJECT_PREFIX = `tab${process.pid}${Date.now().toString(36)}`;

 
const natsUrl = process.env.TEST_NATS_URL;

describe.skipIf(!natsUrl)('agent changes reach other services over NATS', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let listener: NatsBus;

  beforeAll(async () => {
    t = await createTestApp({ bus: await NatsBus.connect(natsUrl!, { name: 'cp-test', subjectPrefix: SUBJECT_PREFIX }) });
    tenant = await createTenant(t.database);
    listener = await NatsBus.connect(natsUrl!, { name: 'gateway-test', subjectPrefix: SUBJECT_PREFIX });
  });
  afterAll(async () => {
    await t.close();
    await t.bus.close();
    await listener.close();
  });

  it('publishes created, updated, status, published and deleted events with the version', async () => {
    const seen: Array<BusMessage<'agentChanged'>> = [];
    const sub = listener.subscribe('agentChanged', `agent.${tenant.tenantId}.*.changed`, (m) => void seen.push(m));
    await listener.flush();
    const agent = (await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody())).json();
    await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${agent.id}`, { firstMessage: 'Hello!' });
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`);
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/publish`, { notes: 'v2 live' });
    await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent.id}`);
    await vi.waitFor(() => expect(seen).toHaveLength(5), { timeout: 3000 });
    expect(seen.map((m) => [m.payload.change, m.payload.version])).toEqual([
      ['created', 1],
      ['updated', 2],
      ['status', 2],
      ['published', 2],
      ['deleted', null],
    ]);
    expect(seen[0]!.subject).toBe(SUBJECTS.agentChanged.subject(tenant.tenantId, agent.id));
    await sub.close();
  });
});
