import { existsSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, newId, parsePrometheusText } from '@vap/shared';
import type { AgentConfig, BusSubscription, PrometheusExposition } from '@vap/shared';
import { callerSpeechMulaw, startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import type { MediaGateway } from '../../src/gateway.js';
import { runCallerScript } from '../../src/simulators/scripted-caller.js';
import { bistroAgent, dial, standInControlPlane } from '../gateway-world.js';

/**
 * GET /metrics of a real gateway around a sandbox call: a simulated Twilio caller on the
 * media stream, the provider simulators, and a bus responder standing in for the control
 * plane. The scraped text is parsed strictly (legal names, declared families).
 */

const logger = pino({ level: 'silent' });
const TENANT = 'ten_metrics_test';
const LONG_REPLY =
  'We are open every day from eleven in the morning until ten at night, except on Mondays when we open at five in the afternoon, and on public holidays we keep the same hours as on Sundays.';

let bus: InProcessBus;
let providers: ProviderRuntime;
let gateway: MediaGateway;
let guarded: MediaGateway;
const agents = new Map<string, AgentConfig>();
const ended = new Set<string>();
let conversations: Map<string, string>;
const subs: BusSubscription[] = [];

async function scrape(gw: MediaGateway): Promise<PrometheusExposition> {
  const res = await fetch(`${gw.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

beforeAll(async () => {
  bus = new InProcessBus();
  providers = await startProviders({});
  providers.simulators.openai!.addReply({ match: 'book a table', reply: 'Of course. What time would you like to come?' });
  providers.simulators.openai!.addReply({ match: 'opening hours', reply: LONG_REPLY });
  providers.simulators.openai!.addReply({ match: 'located', reply: 'We are at twelve Harbour Street.' });
  const id = newId('agt');
  agents.set(id, bistroAgent({ name: 'Metrics agent' }));
  const controlPlane = standInControlPlane(bus, agents, (record) => void ended.add(record.conversationId));
  conversations = controlPlane.conversations;
  subs.push(controlPlane.subscription);
  gateway = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' }), { bus, logger, providers });
  // Also sessions on the gateway's own loop: no pipeline-thread metrics.
  guarded = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent', METRICS_TOKEN: 'scrape-secret', PIPELINE_THREADS: '0' }), { bus, logger, providers });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await guarded?.close();
  await Promise.all(subs.map((s) => s.close()));
  await providers?.close();
  await bus?.close();
});

describe('gateway /metrics', () => {
  it('moves the turn, barge-in, pacing, provider and media-stream metrics of a call', { timeout: 60_000 }, async () => {
    const before = await scrape(gateway);
    const hangupsBefore = before.value('svc_telephony_media_stream_closed_total', { reason: 'hangup' });
    expect(before.value('vap_active_calls')).toBe(0);
    expect(before.value('vap_turn_stage_seconds_count')).toBe(0);
    // Default process metrics: CPU, RSS and event-loop delay.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds']) expect(before.types.has(name), name).toBe(true);
    expect(before.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    // The spec's counters under Prometheus names; api_errors belongs to the control plane.
    expect(before.types.get('svc_telephony_media_stream_closed_total')).toBe('counter');

    const agentId = [...agents.keys()][0]!;
    const { call } = await dial(gateway, providers, agentId, TENANT, ['Hi, I would like to book a table for two tonight.', 'What are your opening hours?', 'Actually, can you tell me where you are located?']);
    const callSid = call.callSid;
    const script = { speech: callerSpeechMulaw, quietMs: 600 };
    await runCallerScript(call, [{ expectAgent: true }, { say: 'Hi, I would like to book a table for two tonight.' }, { expectAgent: true }, { say: 'What are your opening hours?' }], script);
    const duringAt = performance.now();
    const during = await scrape(gateway);
    expect(during.value('vap_active_calls')).toBe(1);
    // The call's session runs on the one pipeline thread (PIPELINE_THREADS defaults to 1).
    expect(during.value('vap_pipeline_thread_calls', { thread: '0' })).toBe(1);
    // The long answer: the caller talks over it, the gateway clears.
    const timings = await runCallerScript(call, [{ sayOverAgent: 'Actually, can you tell me where you are located?', afterMs: 1200 }, { expectAgent: true }], script);
    expect(timings[0]!.bargeInReactionMs).not.toBeNull();
    await call.hangup();
    await vi.waitFor(() => expect(ended.has(conversations.get(callSid) ?? '')).toBe(true), { timeout: 15_000, interval: 50 });

    const after = await scrape(gateway);
    const wallBetweenScrapesSec = (performance.now() - duringAt) / 1000;
    expect(after.value('vap_active_calls')).toBe(0);
    const turns = after.value('vap_turn_stage_seconds_count', { stage: 'total' });
    expect(turns).toBeGreaterThanOrEqual(2);
    for (const stage of ['endpointing', 'stt', 'llm_first_token', 'llm_first_phrase', 'tts_first_byte', 'overhead']) expect(after.value('vap_turn_stage_seconds_count', { stage }), stage).toBe(turns);
    expect(after.value('vap_turn_stage_seconds_sum', { stage: 'total' })).toBeGreaterThan(0);
    // Cumulative buckets: +Inf holds every observation.
    expect(after.value('vap_turn_stage_seconds_bucket', { stage: 'total', le: '+Inf' })).toBe(turns);
    expect(after.value('vap_barge_in_reaction_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(after.value('vap_provider_request_seconds_count', { provider: 'deepgram', capability: 'stt' })).toBe(turns);
    expect(after.value('vap_provider_request_seconds_count', { provider: 'openai', capability: 'llm' })).toBe(turns);
    expect(after.value('vap_provider_request_seconds_count', { provider: 'elevenlabs', capability: 'tts' })).toBe(turns);
    // Pacing: every agent reply went out as paced 20 ms frames.
    const gaps = after.value('vap_outbound_frame_gap_seconds_count');
    expect(gaps).toBeGreaterThan(50);
    expect(after.value('vap_outbound_frame_gap_seconds_bucket', { le: '+Inf' })).toBe(gaps);
    expect(after.value('vap_outbound_frame_gap_seconds_sum') / gaps).toBeGreaterThan(0.015);
    expect(after.value('vap_outbound_frame_gap_seconds_sum') / gaps).toBeLessThan(0.03);
    expect(after.types.get('vap_outbound_late_frames_total')).toBe('counter');
    expect(after.value('vap_calls_ended_total', { status: 'completed' })).toBe(1);
    // The pipeline thread: busy while the call ran, its loop delay over the 10 ms samples since the previous scrape.
    expect(after.types.get('vap_pipeline_thread_busy_seconds_total')).toBe('counter');
    expect(after.value('vap_pipeline_thread_busy_seconds_total', { thread: '0' })).toBeGreaterThan(during.value('vap_pipeline_thread_busy_seconds_total', { thread: '0' }));
    expect(after.value('vap_pipeline_thread_calls', { thread: '0' })).toBe(0);
    const lagP99 = after.value('vap_pipeline_thread_eventloop_lag_p99_seconds', { thread: '0' });
    expect(lagP99).toBeGreaterThanOrEqual(0.01);
    expect(lagP99).toBeLessThan(1);
    expect(after.value('vap_pipeline_thread_eventloop_lag_max_seconds', { thread: '0' })).toBeGreaterThanOrEqual(lagP99);
    if (process.platform === 'linux') {
      // Where the process's CPU went between the scrapes: the loop thread and the pipeline thread each used some,
      // and together no more than the process (10 ms steps on each thread). In total too: the process's counter
      // holds its CPU since it started, each thread's since the thread started.
      expect(after.value('vap_gateway_loop_cpu_seconds_total') + after.value('vap_pipeline_thread_cpu_seconds_total', { thread: '0' })).toBeLessThanOrEqual(after.value('process_cpu_seconds_total') + 0.02);
      const added = (name: string, labels?: Record<string, string>) => after.value(name, labels) - during.value(name, labels);
      const loop = added('vap_gateway_loop_cpu_seconds_total');
      const thread = added('vap_pipeline_thread_cpu_seconds_total', { thread: '0' });
      expect(loop).toBeGreaterThan(0);
      expect(thread).toBeGreaterThan(0);
      expect(loop + thread).toBeLessThanOrEqual(added('process_cpu_seconds_total') + 0.02);
      // The pipeline thread's wait for a core: as the loop's, never negative and under the wall time between the scrapes.
      expect(after.types.get('vap_pipeline_thread_run_queue_wait_seconds_total')).toBe('counter');
      const threadWaited = added('vap_pipeline_thread_run_queue_wait_seconds_total', { thread: '0' });
      expect(threadWaited).toBeGreaterThanOrEqual(0);
      expect(threadWaited).toBeLessThan(wallBetweenScrapesSec);
      // The pipeline thread's OS id names a thread of this process (the gateway runs in the test's process).
      const tid = after.value('vap_pipeline_thread_os_thread_id', { thread: '0' });
      expect(Number.isInteger(tid) && tid !== process.pid).toBe(true);
      expect(existsSync(`/proc/self/task/${tid}`)).toBe(true);
      // The loop thread's wait for a core: a counter that only grows, and no more than the wall time between the scrapes.
      expect(after.types.get('vap_gateway_loop_run_queue_wait_seconds_total')).toBe('counter');
      const waited = added('vap_gateway_loop_run_queue_wait_seconds_total');
      expect(waited).toBeGreaterThanOrEqual(0);
      expect(waited).toBeLessThan(wallBetweenScrapesSec);
    }
    // Twilio's `stop` ended the stream.
    expect(after.value('svc_telephony_media_stream_closed_total', { reason: 'hangup' })).toBe(hangupsBefore + 1);
    // Labels stay bounded: no call or conversation ids.
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(text).not.toContain(callSid);
    expect(text).not.toContain(conversations.get(callSid)!);
  });

  it('counts a provider failure and the call it ended, with the stream closed by us', { timeout: 30_000 }, async () => {
    const before = await scrape(gateway);
    const { call } = await dial(gateway, providers, [...agents.keys()][0]!, TENANT, ['Hi, I would like to book a table for two tonight.']);
    const callSid = call.callSid;
    const script = { speech: callerSpeechMulaw, quietMs: 600 };
    await runCallerScript(call, [{ expectAgent: true }], script);
    // Every attempt of the next LLM request fails (the wrapper retries 3 times): the call ends.
    providers.simulators.openai!.setFaults({ failNext: { status: 503, count: 3 } });
    try {
      await runCallerScript(call, [{ say: 'Hi, I would like to book a table for two tonight.' }, { expectHangup: true, timeoutMs: 20_000 }], script);
    } finally {
      providers.simulators.openai!.resetFaults();
    }
    await vi.waitFor(() => expect(ended.has(conversations.get(callSid) ?? '')).toBe(true), { timeout: 15_000, interval: 50 });
    const after = await scrape(gateway);
    const errors = after.samples.filter((s) => s.name === 'vap_provider_errors_total' && s.labels['provider'] === 'openai' && s.labels['capability'] === 'llm');
    expect(errors.reduce((n, s) => n + s.value, 0) - before.value('vap_provider_errors_total', { provider: 'openai', capability: 'llm' })).toBe(1);
    expect(errors[0]!.labels['code']).toMatch(/^llm\./);
    expect(after.value('vap_calls_ended_total', { status: 'failed' }) - before.value('vap_calls_ended_total', { status: 'failed' })).toBe(1);
    expect(after.value('svc_telephony_media_stream_closed_total', { reason: 'local' }) - before.value('svc_telephony_media_stream_closed_total', { reason: 'local' })).toBe(1);
  });

  it('asks for the bearer token when METRICS_TOKEN is set', async () => {
    const refused = await fetch(`${guarded.url}/metrics`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret' } });
    expect(ok.status).toBe(200);
    const scraped = parsePrometheusText(await ok.text());
    expect(scraped.types.get('vap_active_calls')).toBe('gauge');
    // PIPELINE_THREADS=0: sessions run on the gateway's loop, whose delay nodejs_eventloop_lag_* already shows.
    expect([...scraped.types.keys()].filter((name) => name.startsWith('vap_pipeline_thread'))).toEqual([]);
  });
});
