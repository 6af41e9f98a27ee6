import { afterAll, afterEach, beforeAll } from 'vitest';
import { call, createAgentFor, createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { EventOutbox, startReceiver } from './webhooks.fixtures.js';
import type { Receiver } from './webhooks.fixtures.js';

/** A webhook test file's world: its own database, app, tenant, agent, receiver and outbox. */
export interface WebhookWorld {
  t: TestApp;
  tenant: TestTenant;
  agentId: string;
  receiver: Receiver;
  outbox: EventOutbox;
  /** Creates a webhook through the API for `agentId` (default the world's agent) at `receiver.url + path`. */
  webhook(path: string, over?: Record<string, unknown>): Promise<{ id: string; secret: string; agentId: string }>;
  /** Creates another agent of the tenant. */
  agent(): Promise<string>;
}

export function webhookWorld(): WebhookWorld {
  const w = {} as WebhookWorld;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const iso = await isolatedDatabase();
    drop = iso.drop;
    w.t = await createTestApp({ database: iso.database });
    w.tenant = await createTenant(w.t.database);
    w.agentId = (await createAgentFor(w.t.app, w.tenant.key)).id;
    w.receiver = await startReceiver();
    w.outbox = new EventOutbox();
    w.agent = async () => (await createAgentFor(w.t.app, w.tenant.key)).id;
    w.webhook = async (path, over = {}) => {
      const res = await call(w.t.app, w.tenant.key, 'POST', '/api/v1/webhooks', { agentId: w.agentId, url: `${w.receiver.url}${path}`, events: ['SessionStarted', 'SessionEnded', 'Error'], ...over });
      if (res.statusCode !== 201) throw new Error(`webhook not created: ${res.body}`);
      return res.json();
    };
  });
  // Each test owns its webhooks: an event goes to every webhook of the agent, so a previous
  // test's webhooks (and their pending retries) would receive this test's events.
  afterEach(async () => {
    await w.t.database.pool.query('delete from webhooks');
  });
  afterAll(async () => {
    await w.receiver?.close();
    await w.t?.close();
    await drop?.();
  });
  return w;
}
