import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { InProcessBus, newId } from '@vap/shared';
import type { AgentConfig } from '@vap/shared';
import { startProviders } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import type { MediaGateway } from '../../src/gateway.js';
import { StreamRefusedError, TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { TWILIO_MEDIA_STREAM_PATH } from '../../src/twilio/media-stream-server.js';
import { mediaStreamClosed } from '../../src/twilio/twilio-leg.js';
import type { TwilioLeg } from '../../src/twilio/twilio-leg.js';
import { bistroAgent, dial as dialAgent, standInControlPlane } from '../gateway-world.js';

/**
 * Admission on a real gateway (#5): a stream over GATEWAY_MAX_CALLS, or one that comes while
 * the gateway keeps lagging, is refused at its upgrade with 503 and Retry-After, and /readyz says so
 * until calls are taken again. The first tests hand legs to deps.onCall (no pipelines: the
 * lag read is the gateway loop's own); the last runs calls on a real pipeline thread that
 * falls behind (fixtures/lagging-pipeline-worker.mjs), read through its pings.
 */

const logger = pino({ level: 'silent' });
let gw: MediaGateway | undefined;
let sims: TwilioCallerSimulator[] = [];
/** What the gateway used, closed after it (providers, bus). */
let closeAfterGateway: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const s of sims) s.drop();
  sims = [];
  await gw?.close();
  gw = undefined;
  for (const close of closeAfterGateway.splice(0)) await close();
});

async function start(env: Record<string, string>): Promise<{ gw: MediaGateway; legs: TwilioLeg[]; streamUrl: string }> {
  const legs: TwilioLeg[] = [];
  gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', ...env }), { bus: new InProcessBus(), logger, onCall: (leg) => legs.push(leg as TwilioLeg) });
  return { gw, legs, streamUrl: `${gw.url.replace('http', 'ws')}${TWILIO_MEDIA_STREAM_PATH}` };
}

async function dial(streamUrl: string): Promise<TwilioCallerSimulator> {
  const sim = await TwilioCallerSimulator.connect(streamUrl, { customParameters: { agentId: 'agt_1' } });
  sims.push(sim);
  return sim;
}

/** The status, Retry-After and body (with its type) of an upgrade the gateway answers without switching protocols. */
function refusedUpgrade(url: string): Promise<{ status: number; retryAfter: string | undefined; type: string | undefined; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, type: res.headers['content-type'], body: JSON.parse(text) as Record<string, unknown> });
        ws.terminate();
      });
    });
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    ws.on('error', () => {});
  });
}

describe('gateway admission', () => {
  it('refuses the stream over GATEWAY_MAX_CALLS with 503 and Retry-After, says so on /readyz and /healthz, and takes calls again once one ends', async () => {
    const { gw, legs, streamUrl } = await start({ GATEWAY_MAX_CALLS: '1' });
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
    await dial(streamUrl);
    await vi.waitFor(() => expect(legs).toHaveLength(1));

    const refusedBefore = mediaStreamClosed.get('at-capacity');
    // Why, in the refusal's RFC 7807 body: a carrier ignores it, a person with curl (or the bench's callers) reads it.
    expect(await refusedUpgrade(streamUrl)).toEqual({
      status: 503,
      retryAfter: '5',
      type: 'application/problem+json',
      body: { type: 'about:blank', status: 503, title: 'Not accepting calls', detail: 'The gateway carries 1 call, its limit (GATEWAY_MAX_CALLS=1)', reason: 'at-capacity' },
    });
    await expect(dial(streamUrl)).rejects.toEqual(new StreamRefusedError(503, 5, 'The gateway carries 1 call, its limit (GATEWAY_MAX_CALLS=1)'));
    expect(mediaStreamClosed.get('at-capacity') - refusedBefore).toBe(2);
    expect(legs).toHaveLength(1);

    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(ready.headers.get('retry-after')).toBe('5');
    const problem = (await ready.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ status: 503, title: 'Not accepting calls', reason: 'at-capacity', gatewayId: gw.gatewayId });
    expect(problem['detail']).toBe('The gateway carries 1 call, its limit (GATEWAY_MAX_CALLS=1)');
    expect(await (await fetch(`${gw.url}/healthz`)).json()).toMatchObject({ status: 'ok', activeCalls: 1, acceptingCalls: false, refusing: 'at-capacity' });
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/svc_telephony_media_stream_closed\w*\{[^}]*reason="at-capacity"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/^vap_accepting_calls 0$/m);

    await legs[0]!.hangup();
    await vi.waitFor(async () => expect((await fetch(`${gw.url}/readyz`)).status).toBe(200));
    expect(await (await fetch(`${gw.url}/healthz`)).json()).toMatchObject({ activeCalls: 0, acceptingCalls: true });
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${gw.url}/metrics`)).text()).toMatch(/^vap_accepting_calls 1$/m);
    await dial(streamUrl);
    await vi.waitFor(() => expect(legs).toHaveLength(2));
  });

  it('refuses new streams while its event loop lags past GATEWAY_OVERLOAD_LAG_MS, and takes them again once it has caught up', async () => {
    const { gw, legs, streamUrl } = await start({ GATEWAY_OVERLOAD_LAG_MS: '200' });
    await dial(streamUrl);
    await vi.waitFor(() => expect(legs).toHaveLength(1));
    // The gateway runs in this process: its loop stalls 700 ms twice (one stall alone refuses nobody).
    for (let stall = 0; stall < 2; stall++) {
      const until = performance.now() + 700;
      while (performance.now() < until);
      await new Promise((r) => setTimeout(r, 20));
    }

    const refusedBefore = mediaStreamClosed.get('overloaded');
    const refused = await refusedUpgrade(streamUrl);
    expect(refused).toMatchObject({ status: 503, retryAfter: '5', body: { status: 503, reason: 'overloaded' } });
    // The lag it read: one ~700 ms stall.
    const behind = /^The gateway's pipelines are (\d+) ms behind, over GATEWAY_OVERLOAD_LAG_MS=200$/.exec(String(refused.body['detail']));
    expect(Number(behind?.[1])).toBeGreaterThan(200);
    expect(mediaStreamClosed.get('overloaded') - refusedBefore).toBe(1);
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ reason: 'overloaded' });
    // What an SRE graphs and alerts on: the lag read (one stall, ~700 ms, in seconds) and the refusal.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/^vap_accepting_calls 0$/m);
    const lag = Number(/^vap_overload_lag_seconds ([\d.e-]+)$/m.exec(metrics)?.[1]);
    expect(lag).toBeGreaterThan(0.2);
    // The call already running was not touched.
    expect(legs[0]!.ended).toBe(false);

    await vi.waitFor(async () => expect((await fetch(`${gw.url}/readyz`)).status).toBe(200), { timeout: 3000, interval: 50 });
    const caughtUp = await (await fetch(`${gw.url}/metrics`)).text();
    expect(caughtUp).toMatch(/^vap_accepting_calls 1$/m);
    expect(Number(/^vap_overload_lag_seconds ([\d.e-]+)$/m.exec(caughtUp)?.[1])).toBeLessThanOrEqual(0.1);
    await dial(streamUrl);
    await vi.waitFor(() => expect(legs).toHaveLength(2));
  });
});

describe('gateway admission, its calls on pipeline threads', () => {
  it('refuses new streams while a pipeline thread lags behind its call, answers that call once the thread caught up, and takes streams again', async () => {
    const bus = new InProcessBus();
    const providers = await startProviders({});
    const agentId = newId('agt');
    const controlPlane = standInControlPlane(bus, new Map<string, AgentConfig>([[agentId, bistroAgent()]]));
    closeAfterGateway = [() => controlPlane.subscription.close(), () => providers.close(), () => bus.close()];
    // A real pipeline thread whose loop stalls 2.5 s when the first session opens on it (the fixture).
    const started = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', PIPELINE_THREADS: '1', GATEWAY_OVERLOAD_LAG_MS: '200' }), {
      bus,
      logger,
      providers,
      pipelineWorkerUrl: new URL('../fixtures/lagging-pipeline-worker.mjs', import.meta.url),
    });
    gw = started;
    const first = await dialAgent(started, providers, agentId, 'ten_1', ['Hello']);
    sims.push(first.call);
    // The gateway's loop is free: only the thread's unanswered pings tell it is behind.
    await vi.waitFor(async () => expect((await fetch(`${started.url}/readyz`)).status).toBe(503), { timeout: 2000, interval: 25 });
    const refusedBefore = mediaStreamClosed.get('overloaded');
    const refusal = dialAgent(started, providers, agentId, 'ten_1', ['Hello']);
    await expect(refusal).rejects.toBeInstanceOf(StreamRefusedError);
    await expect(refusal).rejects.toMatchObject({ status: 503, retryAfterS: 5, detail: expect.stringMatching(/^The gateway's pipelines are \d+ ms behind, over GATEWAY_OVERLOAD_LAG_MS=200$/) });
    expect(mediaStreamClosed.get('overloaded') - refusedBefore).toBe(1);
    expect(started.sessions!.activeCalls).toBe(1);
    // Nothing of the greeting yet: the session waits on the stalled thread.
    expect(first.call.heardAgentAudioMs).toBe(0);

    await vi.waitFor(async () => expect((await fetch(`${started.url}/readyz`)).status).toBe(200), { timeout: 5000, interval: 50 });
    // The call that was running is answered, not dropped.
    await vi.waitFor(() => expect(first.call.heardAgentAudioMs).toBeGreaterThan(1000), { timeout: 10_000, interval: 50 });
    expect(started.sessions!.activeCalls).toBe(1);
    const next = await dialAgent(started, providers, agentId, 'ten_1', ['Hello']);
    sims.push(next.call);
    await vi.waitFor(() => expect(next.call.heardAgentAudioMs).toBeGreaterThan(1000), { timeout: 10_000, interval: 50 });
    expect(started.sessions!.activeCalls).toBe(2);
  }, 30_000);
});
