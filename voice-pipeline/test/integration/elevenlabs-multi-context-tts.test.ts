import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ElevenLabsMultiContextTts } from '../../src/providers/elevenlabs/multi-context-tts.js';
import { ElevenLabsSimulator } from '../../src/providers/elevenlabs/simulator.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { TtsEvent, TtsStream, TtsStreamOptions } from '../../src/providers/types.js';
import { ttsContract } from '../contracts/tts.contract.js';

let sim: ElevenLabsSimulator;

beforeAll(async () => {
  sim = await ElevenLabsSimulator.start();
});

afterAll(async () => {
  await sim.close();
});

const makeTts = (options: { firstByteTimeoutMs?: number; inactivityTimeoutMs?: number; apiKey?: string } = {}): ElevenLabsMultiContextTts =>
  new ElevenLabsMultiContextTts({ ...options, apiKey: options.apiKey ?? sim.apiKey, baseUrl: sim.url });

ttsContract({ provider: (options) => makeTts(options), simulator: () => sim, wire: 'multi-stream-input' });

const OPTIONS: TtsStreamOptions = { voiceId: 'voice-multi', outputFormat: 'ulaw_8000' };

async function collect(stream: TtsStream): Promise<TtsEvent[]> {
  const events: TtsEvent[] = [];
  for await (const event of stream.events) events.push(event);
  return events;
}

const spoken = (events: TtsEvent[]): string =>
  events
    .map((e) => (e.type === 'audio' ? (e.alignment?.chars.join('') ?? '') : ''))
    .join('')
    .replace(/\s+/g, ' ')
    .trim();

/** One whole turn: `text` with its flush, then the end; its events. */
async function speakTurn(tts: ElevenLabsMultiContextTts, text: string): Promise<TtsEvent[]> {
  const stream = await tts.open(OPTIONS, new AbortController().signal);
  stream.sendText(text, { flush: true });
  stream.end();
  return collect(stream);
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('ElevenLabs multi-context adapter', () => {
  beforeEach(() => sim.reset());

  it("speaks a call's turns as contexts of one socket, each turn's audio to its own stream", async () => {
    const tts = makeTts();
    expect(spoken(await speakTurn(tts, 'Welcome to Harbour Bistro.'))).toBe('Welcome to Harbour Bistro.');
    const second = await tts.open(OPTIONS, new AbortController().signal);
    const third = await tts.open(OPTIONS, new AbortController().signal);
    // Two contexts at once (a turn queued behind another): their audio must not mix.
    second.sendText('A table for two.', { flush: true });
    third.sendText('On Friday at seven.', { flush: true });
    second.end();
    third.end();
    const [a, b] = await Promise.all([collect(second), collect(third)]);
    expect(spoken(a)).toBe('A table for two.');
    expect(spoken(b)).toBe('On Friday at seven.');
    expect(a.at(-1)).toEqual({ type: 'final' });
    expect(sim.connections).toHaveLength(1);
    const rec = sim.connections[0]!;
    expect(rec.endpoint).toBe('multi-stream-input');
    expect(rec.contexts).toHaveLength(3);
    expect(new Set(rec.contexts).size).toBe(3);
    expect(rec.closeCode).toBeNull();
    tts.close();
    await until(() => rec.closeCode !== null, 1000);
    expect(rec.messages.at(-1)).toEqual({ close_socket: true });
    expect(rec.closeCode).toBe(1000);
  });

  it('after a barge-in, drops what the service still sends for the old turn and speaks the next on the same socket', async () => {
    const tts = makeTts();
    const controller = new AbortController();
    const interrupted = await tts.open(OPTIONS, controller.signal);
    interrupted.sendText('This is a long answer about our opening hours that the caller talks over. ', { flush: true });
    interrupted.sendText('And a second sentence nobody hears. ', { flush: true });
    const seen: TtsEvent[] = [];
    for await (const event of interrupted.events) {
      seen.push(event);
      controller.abort();
    }
    expect(seen).toHaveLength(1);
    const next = await tts.open(OPTIONS, new AbortController().signal);
    next.sendText('Sorry, go ahead.', { flush: true });
    next.end();
    const events = await collect(next);
    expect(spoken(events)).toBe('Sorry, go ahead.');
    const rec = sim.connections[0]!;
    expect(sim.connections).toHaveLength(1);
    expect(rec.messages).toContainEqual({ context_id: rec.contexts[0], close_context: true });
    tts.close();
  });

  it('reconnects for the next turn when the service closed the idle socket between turns', async () => {
    const tts = makeTts({ inactivityTimeoutMs: 1000 });
    await speakTurn(tts, 'Hello.');
    const rec = sim.connections[0]!;
    await until(() => rec.closeCode !== null, 2500);
    expect(rec).toMatchObject({ closeCode: 1008, closedBy: 'server' });
    expect(spoken(await speakTurn(tts, 'Still there?'))).toBe('Still there?');
    expect(sim.connections).toHaveLength(2);
    tts.close();
  });

  it('does not reuse a socket about to reach inactivity_timeout: closes it and opens a new one', async () => {
    // 4 s timeout: a socket idle for 3 s or more is not reused (the margin is a quarter of it).
    const tts = makeTts({ inactivityTimeoutMs: 4000 });
    await speakTurn(tts, 'Hello.');
    const rec = sim.connections[0]!;
    await new Promise((r) => setTimeout(r, 3200));
    expect(rec.closeCode).toBeNull(); // the service has not closed it yet
    expect(spoken(await speakTurn(tts, 'Still there?'))).toBe('Still there?');
    expect(sim.connections).toHaveLength(2);
    expect(sim.connections[1]!.contexts).toEqual(['turn-2']);
    await until(() => rec.closeCode !== null, 2000);
    // Closed 1000 after our close_socket, not 1008 by the service's inactivity timeout.
    expect(rec.messages.at(-1)).toEqual({ close_socket: true });
    expect(rec.closeCode).toBe(1000);
    tts.close();
  });

  it('fails the turn under way when the socket drops, and opens a new socket for the retry', async () => {
    const tts = makeTts();
    sim.setFaults({ dropAfterMs: 150 });
    const stream = await tts.open(OPTIONS, new AbortController().signal);
    stream.sendText('Hello there. ');
    const error = await collect(stream).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'tts.connection_lost', retryable: true });
    sim.resetFaults();
    expect(spoken(await speakTurn(tts, 'Hello there.'))).toBe('Hello there.');
    expect(sim.connections).toHaveLength(2);
    tts.close();
  });

  it('does not reuse a socket that stalled a turn', async () => {
    const tts = makeTts({ firstByteTimeoutMs: 200 });
    sim.setFaults({ neverRespond: true });
    const stalled = await tts.open(OPTIONS, new AbortController().signal);
    stalled.sendText('Is anyone there?', { flush: true });
    await expect(collect(stalled)).rejects.toMatchObject({ code: 'tts.timeout' });
    sim.resetFaults();
    expect(spoken(await speakTurn(tts, 'Is anyone there?'))).toBe('Is anyone there?');
    expect(sim.connections).toHaveLength(2);
    await until(() => sim.connections[0]!.closeCode !== null, 1500);
    tts.close();
  });

  it('gives a stream of other options a socket of its own, and rejects open after close', async () => {
    const tts = makeTts();
    const a = await tts.open(OPTIONS, new AbortController().signal);
    const b = await tts.open({ ...OPTIONS, outputFormat: 'pcm_16000' }, new AbortController().signal);
    a.sendText('One.', { flush: true });
    b.sendText('Two.', { flush: true });
    a.end();
    b.end();
    await Promise.all([collect(a), collect(b)]);
    expect(sim.connections.map((c) => c.query.output_format)).toEqual(['ulaw_8000', 'pcm_16000']);
    // The first socket was let go once its turn ended.
    await until(() => sim.connections[0]!.closeCode !== null, 1500);
    tts.close();
    await expect(tts.open(OPTIONS, new AbortController().signal)).rejects.toMatchObject({ code: 'tts.closed', retryable: false });
  });

  it('ends the open turns silently when the call closes the provider', async () => {
    const tts = makeTts();
    const stream = await tts.open(OPTIONS, new AbortController().signal);
    stream.sendText('A long answer the call ends in the middle of. ', { flush: true });
    const consumed = collect(stream);
    tts.close();
    await expect(consumed).resolves.toBeInstanceOf(Array);
  });

  it("connects many calls' sockets at once without adding listeners to a shared signal (no listener-leak warning)", async () => {
    // A gateway's pipeline thread opens the sockets of the calls it runs; at 200 calls, 11
    // connecting at once once made Node warn "Possible EventTarget memory leak detected".
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    const calls = Array.from({ length: 16 }, () => makeTts());
    try {
      const turns = await Promise.all(calls.map((tts, i) => speakTurn(tts, `Caller ${i + 1}, welcome.`)));
      expect(turns.map(spoken)).toEqual(calls.map((_, i) => `Caller ${i + 1}, welcome.`));
      // Node emits the warning on a later tick than the listener that crossed the limit.
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      process.off('warning', onWarning);
      for (const tts of calls) tts.close();
    }
    expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
  });
});

describe('ElevenLabs simulator: multi-stream-input', () => {
  beforeEach(() => sim.reset());

  async function raw(): Promise<{ ws: WebSocket; received: Record<string, unknown>[] }> {
    const ws = new WebSocket(`${sim.url.replace('http', 'ws')}/v1/text-to-speech/voice-raw/multi-stream-input?output_format=ulaw_8000`, { headers: { 'xi-api-key': sim.apiKey } });
    const received: Record<string, unknown>[] = [];
    ws.on('message', (data) => received.push(JSON.parse(data.toString()) as Record<string, unknown>));
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return { ws, received };
  }

  it('names the context on every message, takes an empty text as keep-alive, and ends a context with isFinal', async () => {
    const { ws, received } = await raw();
    ws.send(JSON.stringify({ text: ' ', context_id: 'a' }));
    ws.send(JSON.stringify({ text: '', context_id: 'a' }));
    ws.send(JSON.stringify({ text: 'Good evening. ', context_id: 'a' }));
    ws.send(JSON.stringify({ context_id: 'a', close_context: true }));
    await until(() => received.some((m) => m.isFinal === true), 2000);
    // close_context without a flush drops the buffered text: nothing was generated.
    expect(received).toEqual([{ isFinal: true, contextId: 'a' }]);
    ws.send(JSON.stringify({ text: 'Good evening. ', context_id: 'b', flush: true }));
    ws.send(JSON.stringify({ context_id: 'b', close_context: true }));
    await until(() => received.filter((m) => m.isFinal === true).length === 2, 2000);
    const forB = received.slice(1);
    expect(forB.length).toBeGreaterThan(1);
    expect(forB.every((m) => m.contextId === 'b')).toBe(true);
    expect(forB.at(-1)).toEqual({ isFinal: true, contextId: 'b' });
    expect(sim.lastConnection!.contexts).toEqual(['a', 'b']);
    expect(sim.lastConnection!.generations).toEqual(['Good evening. ']);
    ws.send(JSON.stringify({ close_socket: true }));
    await until(() => sim.lastConnection!.closeCode !== null, 1000);
    expect(sim.lastConnection).toMatchObject({ closeCode: 1000, closedBy: 'server' });
  });
});
