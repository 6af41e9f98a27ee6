import { describe, expect, it, vi } from 'vitest';
import { InProcessBus } from '../../src/bus/in-process-bus.js';
import { BusRequestError, subjectMatches } from '../../src/bus/bus.js';
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

  it('gives each message to one member of a queue group and to every plain subscriber', async () => {
    const bus = new InProcessBus();
    const got: string[] = [];
    const subs = [
      bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, () => void got.push('q1'), { queue: 'control-plane' }),
      bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, () => void got.push('q2'), { queue: 'control-plane' }),
      bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, () => void got.push('all')),
    ];
    for (let i = 0; i < 4; i++) await bus.publish('agentChanged', SUBJECTS.agentChanged.subject('ten_1', 'agt_1'), payload);
    await vi.waitFor(() => expect(got).toHaveLength(8));
    expect(got.filter((g) => g === 'all')).toHaveLength(4);
    expect(got.filter((g) => g === 'q1')).toHaveLength(2);
    expect(got.filter((g) => g === 'q2')).toHaveLength(2);
    await Promise.all(subs.map((s) => s.close()));
  });

  it('answers a request with the validated reply of one responder, and fails clearly without one', async () => {
    const bus = new InProcessBus();
    const req = { provider: 'twilio' as const, channel: 'phone' as const, direction: 'inbound' as const, callSid: 'CA1', tenantId: 'ten_1', agentId: 'agt_1', from: null, to: null, metadata: {}, gatewayId: 'gw_1' };
    await expect(bus.request('callPrepare', req)).rejects.toMatchObject({ code: 'no-responders' });
    const sub = bus.respond('callPrepare', async (p) => ({ ok: false, code: 'agent-not-found', message: p.agentId }));
    await expect(bus.request('callPrepare', req)).resolves.toEqual({ ok: false, code: 'agent-not-found', message: 'agt_1' });
    await sub.close();
    const slow = bus.respond('callPrepare', () => new Promise(() => {}));
    await expect(bus.request('callPrepare', req, { timeoutMs: 50 })).rejects.toMatchObject({ code: 'timeout' });
    await slow.close();
    const broken = bus.respond('callPrepare', async () => {
      throw new Error('boom');
    });
    const err = await bus.request('callPrepare', req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusRequestError);
    expect(err).toMatchObject({ code: 'responder-failed' });
    await broken.close();
  });
});
