import { describe, expect, it, vi } from 'vitest';
import { NatsBus } from '../../src/bus/nats-bus.js';
import { SUBJECTS } from '../../src/bus/subjects.js';

// CI points this at the machine's NATS server; without one (a laptop) the file is skipped.
 
const url = process.env.TEST_NATS_URL;

describe.skipIf(!url)('NatsBus over a real NATS server', () => {
  it('carries payloads and trace headers between two connections', async () => {
    const a = await NatsBus.connect(url!, { name: 'test-a' });
    const b = await NatsBus.connect(url!, { name: 'test-b' });
    try {
      const tenant = `ten_${Date.now()}`;
      const seen: unknown[] = [];
      const sub = b.subscribe('agentChanged', `agent.${tenant}.*.changed`, (m) => void seen.push(m));
      await b.flush();
      const payload = { tenantId: tenant, agentId: 'agt_1', version: 3, change: 'published' as const, at: new Date().toISOString() };
      await a.publish('agentChanged', SUBJECTS.agentChanged.subject(tenant, 'agt_1'), payload, { traceId: 'trace_nats' });
      await a.flush();
      await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 3000 });
      expect(seen[0]).toEqual({ subject: `agent.${tenant}.agt_1.changed`, payload, headers: { traceId: 'trace_nats' } });
      await sub.close();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
