import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { callerSpeechMulaw, silenceMulaw } from '../../src/audio/caller-speech.js';
import { concatBytes } from '../../src/audio/pcm.js';
import { DeepgramSimulator } from '../../src/providers/deepgram/simulator.js';
import type { SimConnection } from '../../src/providers/deepgram/simulator.js';
import { DeepgramStt } from '../../src/providers/deepgram/stt.js';
import type { DeepgramSttConfig } from '../../src/providers/deepgram/stt.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import { EventCollector, contractOptions, sendPaced, sttContract } from '../contracts/stt.contract.js';

const CONTROL_NAMES: Record<string, string> = { Finalize: 'finalize', CloseStream: 'close', KeepAlive: 'keep-alive' };

sttContract('Deepgram', async () => {
  const sim = await DeepgramSimulator.start();
  return {
    provider: new DeepgramStt({ apiKey: sim.apiKey, baseUrl: sim.url }),
    simulator: {
      setScript: (callKey, lines) => sim.setScript(callKey, lines),
      connections: () =>
        sim.connections.map((c) => ({ query: c.query, authorization: c.authorization, audioBytes: c.audioBytes, controls: c.controlMessages.map((m) => CONTROL_NAMES[m] ?? m), closed: c.closed })),
    },
    expectedAuthorization: `Token ${sim.apiKey}`,
    // Deepgram's names for our options, written out (reference/stt.md §1.1) rather than derived from wire.ts.
    expectedQuery: (o) => [
      ['model', o.model!],
      ['language', o.language!],
      ['encoding', o.encoding],
      ['sample_rate', String(o.sampleRateHz)],
      ['channels', '1'],
      ['interim_results', String(o.interimResults)],
      ['endpointing', String(o.endpointingMs)],
      ['utterance_end_ms', String(o.utteranceEndMs)],
      ['vad_events', 'true'],
      ['punctuate', String(o.punctuate)],
      ['smart_format', String(o.smartFormat)],
      ['profanity_filter', String(o.profanityFilter)],
      ...Object.entries(o.tags ?? {}).map(([k, v]): [string, string] => ['extra', `${k}:${v}`]),
    ],
    close: () => sim.close(),
  };
});

describe('Deepgram STT adapter failures', () => {
  let sim: DeepgramSimulator;
  let speech: Uint8Array;
  const stt = (overrides: Partial<DeepgramSttConfig> = {}): DeepgramStt => new DeepgramStt({ apiKey: sim.apiKey, baseUrl: sim.url, ...overrides });
  const options = () => contractOptions(`CA-fault-${Math.random().toString(36).slice(2)}`);
  const signal = () => new AbortController().signal;
  const last = (): SimConnection => sim.connections[sim.connections.length - 1]!;

  beforeAll(async () => {
    sim = await DeepgramSimulator.start();
    speech = await callerSpeechMulaw('Yes please.');
  });
  afterEach(() => sim.resetFaults());
  afterAll(async () => {
    await sim.close();
  });

  async function openFailure(p: Promise<unknown>): Promise<unknown> {
    return p.then(
      () => expect.fail('open should have failed'),
      (e: unknown) => e,
    );
  }

  it('rejects a wrong API key at the upgrade as a non-retryable stt.unauthorized', async () => {
    const err = await openFailure(stt({ apiKey: 'wrong-key' }).open(options(), signal()));
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ provider: 'deepgram', capability: 'stt', code: 'stt.unauthorized', status: 401, retryable: false });
    expect(last().status).toBe(401);
    expect(last().authorization).toBe('Token wrong-key');
  });

  it('reports a 500 at the upgrade as a retryable stt.http_500 and a 429 as retryable too', async () => {
    sim.setFaults({ rejectUpgradeStatus: { status: 500, count: 1 } });
    const err500 = await openFailure(stt().open(options(), signal()));
    expect(err500).toMatchObject({ code: 'stt.http_500', status: 500, retryable: true });
    sim.setFaults({ rejectUpgradeStatus: { status: 429, count: 1 } });
    const err429 = await openFailure(stt().open(options(), signal()));
    expect(err429).toMatchObject({ code: 'stt.http_429', status: 429, retryable: true });
    // The fault was for one connection each: the next open works.
    const stream = await stt().open(options(), signal());
    await stream.close();
  });

  it('makes the events iterable throw a retryable stt.connection_lost when the socket drops mid-stream', async () => {
    sim.setFaults({ dropAfterMs: 300 });
    const stream = await stt().open(options(), signal());
    const events = new EventCollector(stream);
    await sendPaced(stream, speech, 2);
    await events.ended(3_000);
    expect(events.error).toBeInstanceOf(ProviderError);
    expect(events.error).toMatchObject({ code: 'stt.connection_lost', retryable: true });
    expect(last().closeCode).toBe(1006);
    stream.send(silenceMulaw(20)); // a dead stream swallows audio
    await stream.close();
  });

  it('surfaces a server close with 1011 as stt.connection_lost carrying the reason', async () => {
    sim.setFaults({ closeAfterMs: 100, closeCode: 1011 });
    const stream = await stt().open(options(), signal());
    const events = new EventCollector(stream);
    await events.ended(3_000);
    expect(events.error).toMatchObject({ code: 'stt.connection_lost', retryable: true });
    expect((events.error as Error).message).toContain('1011');
  });

  it('rejects open with a retryable stt.connection_failed when nothing listens at baseUrl', async () => {
    const gone = await DeepgramSimulator.start();
    const url = gone.url;
    await gone.close();
    const err = await openFailure(new DeepgramStt({ apiKey: 'k', baseUrl: url }).open(options(), signal()));
    expect(err).toMatchObject({ code: 'stt.connection_failed', retryable: true });
  });

  it('rejects open with an AbortError when the signal aborts while connecting', async () => {
    sim.setFaults({ upgradeDelayMs: 2_000 });
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 100);
    const err = await openFailure(stt().open(options(), ac.signal));
    expect((err as Error).name).toBe('AbortError');
    expect(err).not.toBeInstanceOf(ProviderError);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('rejects open with a retryable stt.timeout when the upgrade takes longer than connectTimeoutMs', async () => {
    sim.setFaults({ upgradeDelayMs: 2_000 });
    const started = Date.now();
    const err = await openFailure(stt({ connectTimeoutMs: 200 }).open(options(), signal()));
    expect(err).toMatchObject({ code: 'stt.timeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('ends the events iterable with an AbortError when the signal aborts after open', async () => {
    const ac = new AbortController();
    const stream = await stt().open(options(), ac.signal);
    const events = new EventCollector(stream);
    ac.abort();
    await events.ended(1_000);
    expect((events.error as Error).name).toBe('AbortError');
    await stream.close();
  });

  it('delays results by firstResultDelayMs', async () => {
    sim.setFaults({ firstResultDelayMs: 500 });
    const stream = await stt().open(options(), signal());
    const events = new EventCollector(stream);
    const sentAt = Date.now();
    stream.send(concatBytes([speech, silenceMulaw(600)])); // one burst: the simulator works on audio time
    await events.waitFor(() => events.events.length > 0, 3_000, 'the first event');
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(450);
    await events.waitFor(() => events.finals().length === 1, 3_000, 'the final');
    expect(events.finals()[0]!.text).toBe('hello number 1');
    await stream.close();
  });
});

describe('Deepgram STT keep-alive and the idle rule', () => {
  let sim: DeepgramSimulator;
  beforeAll(async () => {
    sim = await DeepgramSimulator.start({ idleTimeoutMs: 300 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('surfaces the server closing an idle stream (NET-0001) as an error', async () => {
    const stream = await new DeepgramStt({ apiKey: sim.apiKey, baseUrl: sim.url, keepAliveIntervalMs: 60_000 }).open(contractOptions('CA-idle'), new AbortController().signal);
    const events = new EventCollector(stream);
    await events.ended(3_000);
    expect(events.error).toMatchObject({ code: 'stt.connection_lost', retryable: true });
    expect((events.error as Error).message).toContain('NET-0001');
    expect(sim.connections[sim.connections.length - 1]!.closeCode).toBe(1011);
  });

  it('keeps a silent stream open by sending KeepAlive text frames', async () => {
    const stream = await new DeepgramStt({ apiKey: sim.apiKey, baseUrl: sim.url, keepAliveIntervalMs: 100 }).open(contractOptions('CA-keepalive'), new AbortController().signal);
    const events = new EventCollector(stream);
    await new Promise((r) => setTimeout(r, 800));
    expect(events.done).toBe(false);
    await stream.close();
    await events.ended();
    expect(events.error).toBeUndefined();
    const conn = sim.connections[sim.connections.length - 1]!;
    expect(conn.controlMessages.filter((m) => m === 'KeepAlive').length).toBeGreaterThanOrEqual(3);
    expect(conn.controlMessages[conn.controlMessages.length - 1]).toBe('CloseStream');
    expect(conn.audioBytes).toBe(0);
  });
});
