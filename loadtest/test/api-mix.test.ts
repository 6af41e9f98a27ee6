import { describe, expect, it } from 'vitest';
import { MIX_CYCLE, MIX_LABELS, mixedRequests, readShare } from '../src/api-mix.js';
import { phasePlan } from '../src/load-generator.js';

const world = {
  apiKeys: ['svc_sb_k0', 'svc_sb_k1', 'svc_sb_k2', 'svc_sb_k3'],
  agentIds: ['agt_a', 'agt_b', 'agt_c'],
  agentBody: { name: 'x', systemPromptTemplate: 'You help.' },
  namePrefix: 'Bench mixed',
};

describe('mixedRequests', () => {
  const requests = mixedRequests(world);

  it('is exactly 80 % reads and 20 % writes over the sequence autocannon cycles through', () => {
    expect(requests).toHaveLength(20);
    expect(requests.filter((r) => r.kind === 'read')).toHaveLength(16);
    expect(requests.filter((r) => r.kind === 'write')).toHaveLength(4);
    expect(readShare(requests)).toBe(0.8);
    // Every half is a whole cycle too, so a connection cut off after ten requests is still 80/20.
    expect(readShare(requests.slice(0, 10))).toBe(0.8);
  });

  it('reads by id, lists agents, reads stats and lists conversations; creates and updates agents', () => {
    const count = (label: string) => requests.filter((r) => r.label === label).length;
    expect(count(MIX_LABELS.get)).toBe(8);
    expect(count(MIX_LABELS.list)).toBe(4);
    expect(count(MIX_LABELS.stats)).toBe(2);
    expect(count(MIX_LABELS.conversations)).toBe(2);
    expect(count(MIX_LABELS.create)).toBe(2);
    expect(count(MIX_LABELS.patch)).toBe(2);
    for (const r of requests) expect(r.kind).toBe(r.method === 'GET' ? 'read' : 'write');
  });

  it('rotates the keys so each sends the same number of requests and one of each four writes', () => {
    const keyOf = (h: Record<string, string> | undefined) => h?.authorization?.replace('Bearer ', '');
    for (const k of world.apiKeys) expect(requests.filter((r) => keyOf(r.headers) === k)).toHaveLength(5);
    expect(requests.filter((r) => r.kind === 'write').map((r) => keyOf(r.headers))).toEqual(world.apiKeys);
  });

  it('spreads reads by id and updates over every agent and gives every create and update a unique name', () => {
    const get = requests.find((r) => r.label === MIX_LABELS.get)!;
    expect(get.paths).toEqual(['/api/v1/agents/agt_a', '/api/v1/agents/agt_b', '/api/v1/agents/agt_c']);
    const stats = requests.find((r) => r.label === MIX_LABELS.stats)!;
    expect(stats.paths).toEqual(world.agentIds.map((id) => `/api/v1/agents/${id}/stats`));
    const patch = requests.find((r) => r.label === MIX_LABELS.patch)!;
    expect(patch).toMatchObject({ method: 'PATCH', paths: get.paths, uniqueNamePrefix: 'Bench mixed renamed' });
    const create = requests.find((r) => r.label === MIX_LABELS.create)!;
    expect(create).toMatchObject({ method: 'POST', paths: ['/api/v1/agents'], body: world.agentBody, uniqueNamePrefix: 'Bench mixed new' });
  });

  it('needs a key and an agent', () => {
    expect(() => mixedRequests({ ...world, apiKeys: [] })).toThrow();
    expect(() => mixedRequests({ ...world, agentIds: [] })).toThrow();
  });

  it('has a cycle of ten with writes at positions 4 and 9', () => {
    expect(MIX_CYCLE).toHaveLength(10);
    expect(MIX_CYCLE.flatMap((s, i) => (s === 'create' || s === 'patch' ? [i] : []))).toEqual([4, 9]);
  });
});

describe('phasePlan', () => {
  it('runs a closed loop as one instance with every connection', () => {
    expect(phasePlan({ connections: 10 })).toEqual([{ startMs: 0, connections: 10, overallRate: undefined }]);
  });

  it('splits an open loop into phases started evenly over a second that add up to the rate and the connections', () => {
    const plan = phasePlan({ connections: 200, overallRate: 1000, phases: 40 });
    expect(plan).toHaveLength(40);
    expect(plan.map((p) => p.startMs).slice(0, 3)).toEqual([0, 25, 50]);
    expect(plan.at(-1)!.startMs).toBe(975);
    expect(plan.reduce((a, p) => a + p.connections, 0)).toBe(200);
    expect(plan.reduce((a, p) => a + (p.overallRate ?? 0), 0)).toBe(1000);
    for (const p of plan) expect(p).toMatchObject({ connections: 5, overallRate: 25 });
  });

  it('hands out remainders one each to the first phases', () => {
    const plan = phasePlan({ connections: 21, overallRate: 101, phases: 4 });
    expect(plan.map((p) => p.connections)).toEqual([6, 5, 5, 5]);
    expect(plan.map((p) => p.overallRate)).toEqual([26, 25, 25, 25]);
  });

  it('refuses phases without a connection and rates below one per connection', () => {
    expect(() => phasePlan({ connections: 3, overallRate: 100, phases: 4 })).toThrow(/phases/);
    expect(() => phasePlan({ connections: 50, overallRate: 40, phases: 5 })).toThrow(/per connection/);
  });
});
