import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { InProcessBus, NatsBus, SUBJECTS } from '@vap/shared';
import type { Bus, BusSubscription } from '@vap/shared';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';

/** Test files share one NATS server: this file's subjects are its own. */
const SUBJECT_PREFIX = `tgw${process.pid}${Date.now().toString(36)}`;

 
const natsUrl = process.env.TEST_NATS_URL;
const logger = pino({ level: 'silent' });

async function exercise(gatewayBus: Bus, controlPlaneBus: Bus): Promise<void> {
  const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0' }), { bus: gatewayBus, logger });
  try {
    const health = await fetch(`${gw.url}/healthz`);
    expect(await health.json()).toEqual({ status: 'ok', gatewayId: gw.gatewayId, bus: gatewayBus.kind, activeCalls: 0, acceptingCalls: true });
    if (gatewayBus instanceof NatsBus) await gatewayBus.flush();
    await controlPlaneBus.publish('agentChanged', SUBJECTS.agentChanged.subject('ten_a', 'agt_a'), { tenantId: 'ten_a', agentId: 'agt_a', version: 4, change: 'updated', at: new Date().toISOString() });
    await vi.waitFor(() => expect(gw.invalidatedAgents.has('agt_a')).toBe(true), { timeout: 3000 });
  } finally {
    await gw.close();
  }
}

describe('media gateway', () => {
  it('answers unknown routes and refused requests with problems, and the sandbox routes only to this machine', async () => {
    const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0' }), { bus: new InProcessBus(), logger });
    try {
      const missing = await fetch(`${gw.url}/nope?x=1`);
      expect(missing.status).toBe(404);
      expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await missing.json()).toEqual({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'No route GET /nope on the media gateway.' });
      const tooLong = await fetch(`${gw.url}/healthz?q=${'a'.repeat(20_000)}`);
      expect(tooLong.status).toBe(431);
      expect(await tooLong.json()).toMatchObject({ status: 431, detail: 'The request line and headers exceed 16 KiB.' });
      // Simulator addresses and call summaries: for pnpm call and the load tests beside the platform, not for the carriers' side.
      expect((await fetch(`${gw.url}/sandbox/providers`)).status).toBe(200);
      const unknownCall = await fetch(`${gw.url}/sandbox/calls/CAnone`);
      expect(unknownCall.status).toBe(404);
      expect(await unknownCall.json()).toMatchObject({ status: 404, callSid: 'CAnone' });
      for (const remoteAddress of ['203.0.113.7', '::ffff:10.0.0.2', '2001:db8::1']) {
        const res = await gw.app.inject({ method: 'GET', url: '/sandbox/providers', remoteAddress });
        expect(res.statusCode, remoteAddress).toBe(404);
        expect(res.json()).toMatchObject({ status: 404, detail: 'No route GET /sandbox/providers on the media gateway.' });
      }
      for (const remoteAddress of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) expect((await gw.app.inject({ method: 'GET', url: '/sandbox/providers', remoteAddress })).statusCode, remoteAddress).toBe(200);
      // Health stays public (load balancers probe it from elsewhere).
      expect((await gw.app.inject({ method: 'GET', url: '/healthz', remoteAddress: '203.0.113.7' })).statusCode).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('serves health and drops cached agents the control plane changed (in-process bus)', async () => {
    const bus = new InProcessBus();
    await exercise(bus, bus);
  });

  it('sets the process\'s V8 heap growth from its configuration at start, and says so', async () => {
    const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', GATEWAY_HEAP_GROWING_PERCENT: '150' }), { bus: new InProcessBus(), logger });
    try {
      expect(gw.heapGrowth).toEqual({ kind: 'set', percent: 150 });
    } finally {
      await gw.close();
    }
    const untouched = await startMediaGateway({ ...loadGatewayConfig({ GATEWAY_PORT: '0' }), heapGrowingPercent: 0 }, { bus: new InProcessBus(), logger });
    try {
      expect(untouched.heapGrowth).toEqual({ kind: 'v8-default' });
    } finally {
      await untouched.close();
    }
  });

  it.skipIf(!natsUrl)('hears the control plane over a real NATS server', async () => {
    const gwBus = await NatsBus.connect(natsUrl!, { name: 'gw-test', subjectPrefix: SUBJECT_PREFIX });
    const cpBus = await NatsBus.connect(natsUrl!, { name: 'cp-test', subjectPrefix: SUBJECT_PREFIX });
    try {
      await exercise(gwBus, cpBus);
    } finally {
      await gwBus.close();
      await cpBus.close();
    }
  });

  it('leaves nothing running when it cannot start (its port is taken)', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    // Counts the gateway's bus subscriptions still open: its teardown closes them.
    const open = new Set<BusSubscription>();
    class CountingBus extends InProcessBus {
      override subscribe(...args: Parameters<InProcessBus['subscribe']>): BusSubscription {
        const sub = super.subscribe(...args);
        open.add(sub);
        return { ...sub, close: async () => (open.delete(sub), await sub.close()) };
      }
    }
    const bus = new CountingBus();
    try {
      const port = String((taken.address() as AddressInfo).port);
      await expect(startMediaGateway(loadGatewayConfig({ GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: port }), { bus, logger })).rejects.toMatchObject({ code: 'EADDRINUSE' });
      expect(open.size).toBe(0);
    } finally {
      taken.close();
      await bus.close();
    }
  }, 30_000);

  it('rejects a bad port in its configuration', () => {
    expect(() => loadGatewayConfig({ GATEWAY_PORT: '70000' })).toThrow(/GATEWAY_PORT/);
  });
});
