import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ElevenLabsSimulator } from '../../src/providers/elevenlabs/simulator.js';
import { ElevenLabsTts } from '../../src/providers/elevenlabs/tts.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { TtsEvent, TtsOutputFormat, TtsStream } from '../../src/providers/types.js';
import { ttsContract } from '../contracts/tts.contract.js';

let sim: ElevenLabsSimulator;

beforeAll(async () => {
  sim = await ElevenLabsSimulator.start();
});

afterAll(async () => {
  await sim.close();
});

const makeTts = (options: { firstByteTimeoutMs?: number; inactivityTimeoutMs?: number; apiKey?: string } = {}): ElevenLabsTts =>
  new ElevenLabsTts({ ...options, apiKey: options.apiKey ?? sim.apiKey, baseUrl: sim.url });

ttsContract({ provider: (options) => makeTts(options), simulator: () => sim });

async function collect(stream: TtsStream): Promise<TtsEvent[]> {
  const events: TtsEvent[] = [];
  for await (const event of stream.events) events.push(event);
  return events;
}

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

/** A raw client for what the adapter never does (key in the message, no flush, idling). */
async function rawClient(query: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; received: Record<string, unknown>[]; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(`${sim.url.replace('http', 'ws')}/v1/text-to-speech/voice-raw/stream-input?${query}`, { headers });
  const received: Record<string, unknown>[] = [];
  ws.on('message', (data) => received.push(JSON.parse(data.toString()) as Record<string, unknown>));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, received, closed };
}

describe('ElevenLabs adapter specifics', () => {
  beforeEach(() => sim.reset());

  it('maps a 1008 auth close after the first message to tts.unauthorized', async () => {
    sim.setFaults({ rejectAuth: 'first-message' });
    const stream = await makeTts().open({ voiceId: 'v', outputFormat: 'pcm_16000' }, new AbortController().signal);
    const error = await rejection(collect(stream));
    expect(error).toMatchObject({ code: 'tts.unauthorized', retryable: false });
    expect(sim.lastConnection!.closeCode).toBe(1008);
  });

  it('rejects a wrong key with 401 at the upgrade', async () => {
    const error = await rejection(makeTts({ apiKey: 'wrong' }).open({ voiceId: 'v', outputFormat: 'pcm_16000' }, new AbortController().signal));
    expect(error).toMatchObject({ code: 'tts.unauthorized', status: 401, retryable: false });
  });

  it('reports an output format the service refuses as a non-retryable HTTP error', async () => {
    const error = await rejection(makeTts().open({ voiceId: 'v', outputFormat: 'mp3_44100_128' as TtsOutputFormat }, new AbortController().signal));
    expect(error).toMatchObject({ code: 'tts.http_400', status: 400, retryable: false });
  });

  it('times out a connection whose upgrade is never answered', async () => {
    const held: Socket[] = [];
    const silent: Server = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const tts = new ElevenLabsTts({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}`, connectTimeoutMs: 200 });
    const error = await rejection(tts.open({ voiceId: 'v', outputFormat: 'pcm_16000' }, new AbortController().signal));
    expect(error).toMatchObject({ code: 'tts.timeout', retryable: true });
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('rejects open with an AbortError when the signal aborts during the handshake', async () => {
    const held: Socket[] = [];
    const silent: Server = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const tts = new ElevenLabsTts({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}`, connectTimeoutMs: 5000 });
    await expect(tts.open({ voiceId: 'v', outputFormat: 'pcm_16000' }, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(1000);
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('reports a refused connection as tts.connection_failed, retryable', async () => {
    const closed = await ElevenLabsSimulator.start();
    const url = closed.url;
    await closed.close();
    const error = await rejection(new ElevenLabsTts({ apiKey: 'k', baseUrl: url }).open({ voiceId: 'v', outputFormat: 'pcm_16000' }, new AbortController().signal));
    expect(error).toMatchObject({ code: 'tts.connection_failed', retryable: true });
  });

  it('keeps a pre-opened socket alive with single-space keep-alives during a long pause', async () => {
    const stream = await makeTts({ inactivityTimeoutMs: 1000 }).open({ voiceId: 'v', outputFormat: 'pcm_16000' }, new AbortController().signal);
    await new Promise((r) => setTimeout(r, 1300));
    const rec = sim.lastConnection!;
    expect(rec.query.inactivity_timeout).toBe('1');
    expect(rec.closeCode).toBeNull();
    expect(rec.messages.slice(1)).toContainEqual({ text: ' ' });
    stream.sendText('Still here. ');
    stream.end();
    expect((await collect(stream)).at(-1)).toEqual({ type: 'final' });
  });
});

describe('ElevenLabs simulator', () => {
  beforeEach(() => sim.reset());

  it('accepts the key as xi_api_key or xi-api-key in the first message', async () => {
    for (const field of ['xi_api_key', 'xi-api-key']) {
      const client = await rawClient('output_format=pcm_16000');
      client.ws.send(JSON.stringify({ text: ' ', [field]: sim.apiKey }));
      client.ws.send(JSON.stringify({ text: 'Hi there. ', flush: true }));
      client.ws.send(JSON.stringify({ text: '' }));
      expect(await client.closed).toEqual({ code: 1000, reason: '' });
      expect(client.received.at(-1)).toEqual({ isFinal: true });
      expect(client.received.some((m) => typeof m.audio === 'string')).toBe(true);
    }
  });

  it('closes 1008 after the first message when no key is given', async () => {
    const client = await rawClient('output_format=pcm_16000');
    client.ws.send(JSON.stringify({ text: ' ' }));
    const closed = await client.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/API key/);
  });

  it('rejects a first message that is not the single-space initialisation', async () => {
    const client = await rawClient('output_format=pcm_16000', { 'xi-api-key': sim.apiKey });
    client.ws.send(JSON.stringify({ text: 'Hello ' }));
    expect((await client.closed).code).toBe(1008);
    expect(client.received[0]).toMatchObject({ error: 'invalid_input_message', code: 1008 });
  });

  it('buffers text until the chunk schedule threshold is reached', async () => {
    const client = await rawClient('output_format=ulaw_8000', { 'xi-api-key': sim.apiKey });
    client.ws.send(JSON.stringify({ text: ' ', generation_config: { chunk_length_schedule: [60] } }));
    client.ws.send(JSON.stringify({ text: 'Thirty characters of text... ' }));
    await new Promise((r) => setTimeout(r, 150));
    expect(client.received).toHaveLength(0);
    client.ws.send(JSON.stringify({ text: 'and thirty more, to pass it now. ' }));
    await expect.poll(() => client.received.length, { timeout: 2000 }).toBeGreaterThan(0);
    const first = client.received[0] as { audio: string; alignment: { chars: string[]; charStartTimesMs: number[]; charDurationsMs: number[] } };
    expect(first.alignment.chars.length).toBe(first.alignment.charStartTimesMs.length);
    client.ws.close();
    await client.closed;
  });

  it('closes 1008 with the documented reason after inactivity_timeout seconds without messages', async () => {
    const client = await rawClient('output_format=pcm_16000&inactivity_timeout=1', { 'xi-api-key': sim.apiKey });
    client.ws.send(JSON.stringify({ text: ' ' }));
    const closed = await client.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/Have not received a new text input within the timeout of 1 seconds/);
  });

  it('serves faults, reset and health over its control API', async () => {
    const post = (path: string, body?: unknown): Promise<Response> =>
      fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? '' : JSON.stringify(body) });
    const set = await post('/__sim/faults', { neverRespond: true, firstByteDelayMs: 50 });
    expect(await set.json()).toMatchObject({ faults: { neverRespond: true, firstByteDelayMs: 50, rejectAuth: false } });
    expect(await (await post('/__sim/reset')).json()).toMatchObject({ faults: { neverRespond: false, firstByteDelayMs: 0 } });
    const health = await fetch(`${sim.url}/__sim/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
  });

  it('answers the HTTP stream endpoint with raw audio bytes, and 401 for a wrong key', async () => {
    const url = `${sim.url}/v1/text-to-speech/voice-http/stream?output_format=pcm_16000`;
    const ok = await fetch(url, { method: 'POST', headers: { 'xi-api-key': sim.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'Hello from HTTP.' }) });
    expect(ok.status).toBe(200);
    const bytes = new Uint8Array(await ok.arrayBuffer());
    expect(bytes.length % 2).toBe(0);
    expect(bytes.length / 32).toBeGreaterThan(300); // ms of 16 kHz PCM for 16 characters
    const denied = await fetch(url, { method: 'POST', headers: { 'xi-api-key': 'wrong' }, body: JSON.stringify({ text: 'x' }) });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toMatchObject({ detail: { status: 'invalid_api_key' } });
  });
});
