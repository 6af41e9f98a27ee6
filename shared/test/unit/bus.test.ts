import { describe, expect, it, vi } from 'vitest';
import { InProcessBus } from '../../src/bus/in-process-bus.js';
import { subjectMatches } from '../../src/bus/bus.js';
import { SUBJECTS } from '../../src/bus/subjects.js';

const payload = { tenantId: 'ten_1', agentId: 'agt_1', version: 2, change: 'updated' as const, at: '2026-01-01T00:00:00.000Z' };

describe('subjectMatches', () => {
  it('follows NATS wildcard rules', () => {
    expect(subjectMatches('agent.*.*.changed', 'agent.t.a.changed')).toBe(true);
    expect(subjectMatches('agent.*.changed', 'agent.t.a.changed')).toBe(false);
    expect(subjectMatches('agent.>', 'agent.t.a.changed')).toBe(true);
    expect(subjectMatches('agent.>', 'agent')).toBe(false);
    expect(subjectMatches('agent.t.a.changed', 'agent.t.a.changed')).toBe(true);
  });
});

describe('InProcessBus', () => {
  it('delivers a validated copy to matching subscribers, asynchronously, with headers', async () => {
    const bus = new InProcessBus();
    const seen: unknown[] = [];
    const sub = bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, (m) => void seen.push(m));
    await bus.publish('agentChanged', SUBJECTS.agentChanged.subject('ten_1', 'agt_1'), payload, { traceId: 'trace_x' });
    expect(seen).toHaveLength(0);
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]).toEqual({ subject: 'agent.ten_1.agt_1.changed', payload, headers: { traceId: 'trace_x' } });
    await sub.close();
    await bus.publish('agentChanged', SUBJECTS.agentChanged.subject('ten_1', 'agt_1'), payload);
    await new Promise((r) => setTimeout(r, 10));
    expect(seen).toHaveLength(1);
  });

  it('reports a payload that breaks its schema to the error hook instead of the handler', async () => {
    const errors: unknown[] = [];
    const bus = new InProcessBus({ onHandlerError: (e) => void errors.push(e) });
    const handler = vi.fn();
    bus.subscribe('agentChanged', '>', handler);
    await bus.publish('agentChanged', 'agent.t.a.changed', { ...payload, change: 'exploded' } as never);
    await vi.waitFor(() => expect(errors).toHaveLength(1));
    expect(handler).not.toHaveBeenCalled();
  });
});
