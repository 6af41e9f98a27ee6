import { describe, expect, it, vi } from 'vitest';
import { BusRequestError } from '../../src/bus/bus.js';
import { NatsBus } from '../../src/bus/nats-bus.js';
import type { RequestPayload } from '../../src/bus/subjects.js';
import { SUBJECTS } from '../../src/bus/subjects.js';

/** Test files share one NATS server: this file's subjects are its own. */
const SUBJECT_PREFIX = `tnb${process.pid}${Date.now().toString(36)}`;

// CI points this at the machine's NATS server; without one (a laptop) the file is skipped.
 
const url = process.env.TEST_NATS_URL;

describe.skipIf(!url)('NatsBus over a real NATS server', () => {
  it('carries payloads and trace headers between two connections', async () => {
    const a = await NatsBus.connect(url!, { name: 'test-a', subjectPrefix: SUBJECT_PREFIX });
    const b = await NatsBus.connect(url!, { name: 'test-b', subjectPrefix: SUBJECT_PREFIX });
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

  it('answers each request once from a queue group, and keeps installations with another prefix apart', async () => {
    const [cp1, cp2, gw, other] = await Promise.all([
      NatsBus.connect(url!, { name: 'cp1', subjectPrefix: SUBJECT_PREFIX }),
      NatsBus.connect(url!, { name: 'cp2', subjectPrefix: SUBJECT_PREFIX }),
      NatsBus.connect(url!, { name: 'gw', subjectPrefix: SUBJECT_PREFIX }),
      NatsBus.connect(url!, { name: 'other', subjectPrefix: `${SUBJECT_PREFIX}x` }),
    ]);
    try {
      const answered: string[] = [];
      const subs = [
        cp1.respond('callPrepare', async () => (answered.push('cp1'), { ok: false as const, code: 'agent-not-found' as const, message: 'cp1' }), { queue: 'control-plane' }),
        cp2.respond('callPrepare', async () => (answered.push('cp2'), { ok: false as const, code: 'agent-not-found' as const, message: 'cp2' }), { queue: 'control-plane' }),
        other.respond('callPrepare', async () => (answered.push('other'), { ok: false as const, code: 'agent-inactive' as const, message: 'other' }), { queue: 'control-plane' }),
      ];
      await Promise.all([cp1.flush(), cp2.flush(), other.flush()]);
      const req: RequestPayload<'callPrepare'> = { provider: 'twilio', channel: 'phone', direction: 'inbound', callSid: 'CA1', tenantId: 'ten_1', agentId: 'agt_1', from: null, to: null, metadata: {}, gatewayId: 'gw_1' };
      const replies = await Promise.all([1, 2, 3, 4, 5, 6].map(() => gw.request('callPrepare', req, { timeoutMs: 3000 })));
      expect(replies.every((r) => !r.ok && r.code === 'agent-not-found')).toBe(true);
      expect(answered).toHaveLength(6);
      expect(answered).not.toContain('other');
      await Promise.all(subs.map((s) => s.close()));
      await expect(gw.request('callPrepare', req, { timeoutMs: 1000 })).rejects.toBeInstanceOf(BusRequestError);
    } finally {
      await Promise.all([cp1.close(), cp2.close(), gw.close(), other.close()]);
    }
  });
});
