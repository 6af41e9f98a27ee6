import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { callerSpeechMulaw, silenceMulaw } from '../../src/audio/caller-speech.js';
import { concatBytes } from '../../src/audio/pcm.js';
import { DeepgramSimulator } from '../../src/providers/deepgram/simulator.js';
import type { DeepgramServerMessage } from '../../src/providers/deepgram/wire.js';

/** Opens a raw socket; resolves with it once open, or with the HTTP status of a refused upgrade. */
function connect(url: string, opts: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<{ ws: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers ?? {} });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', reject);
  });
}

function collect(ws: WebSocket): { messages: DeepgramServerMessage[]; closed: Promise<{ code: number; reason: string }> } {
  const messages: DeepgramServerMessage[] = [];
  ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString()) as DeepgramServerMessage));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return { messages, closed };
}

describe('Deepgram simulator', () => {
  let sim: DeepgramSimulator;
  const query = 'encoding=mulaw&sample_rate=8000&interim_results=true&endpointing=300&punctuate=true';
  const auth = (): Record<string, string> => ({ Authorization: `Token ${sim.apiKey}` });
  const post = (path: string, body: unknown): Promise<Response> => fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  beforeAll(async () => {
    sim = await DeepgramSimulator.start({ apiKey: 'k-123', idleTimeoutMs: 500 });
  });
  beforeEach(() => sim.reset());
  afterAll(async () => {
    await sim.close();
  });

  it('refuses the upgrade with 401 without a valid token and 400 without encoding and sample_rate', async () => {
    expect(await connect(`${sim.wsUrl}?${query}`)).toMatchObject({ status: 401 });
    expect(await connect(`${sim.wsUrl}?${query}`, { headers: { Authorization: 'Token nope' } })).toMatchObject({ status: 401 });
    const bad = await connect(`${sim.wsUrl}?sample_rate=8000`, { headers: auth() });
    expect(bad).toMatchObject({ status: 400 });
    expect(JSON.parse((bad as { body: string }).body)).toMatchObject({ err_code: 'INVALID_QUERY_PARAMETER' });
    expect(await connect(`${sim.url.replace('http', 'ws')}/v1/other?${query}`, { headers: auth() })).toMatchObject({ status: 404 });
    expect(sim.connections.map((c) => c.status)).toEqual([401, 401, 400]);
  });

  it('accepts the browser form of auth (subprotocols token, <key>)', async () => {
    const r = await connect(`${sim.wsUrl}?${query}`, { protocols: ['token', sim.apiKey] });
    if (!('ws' in r)) throw new Error(`refused with ${r.status}`);
    expect(r.ws.protocol).toBe('token');
    r.ws.close();
  });

  it('is driven over HTTP: health, script, faults and reset', async () => {
    expect(await (await fetch(`${sim.url}/__sim/health`)).json()).toMatchObject({ ok: true });
    expect((await post('/__sim/script', { callKey: 'CA9', utterances: ['Can you repeat that please?'] })).status).toBe(204);
    const faults = await post('/__sim/faults', { firstResultDelayMs: 5, rejectUpgradeStatus: { status: 503, count: 1 } });
    expect(await faults.json()).toMatchObject({ firstResultDelayMs: 5, rejectUpgradeStatus: { status: 503, count: 1 } });
    expect((await post('/__sim/faults', { bogus: 1 })).status).toBe(400);
    expect(await connect(`${sim.wsUrl}?${query}&extra=call_sid:CA9`, { headers: auth() })).toMatchObject({ status: 503 });

    const r = await connect(`${sim.wsUrl}?${query}&extra=call_sid:CA9`, { headers: auth() });
    if (!('ws' in r)) throw new Error(`refused with ${r.status}`);
    const { messages, closed } = collect(r.ws);
    r.ws.send(concatBytes([await callerSpeechMulaw('Can you repeat that please?'), silenceMulaw(500)]));
    r.ws.send(JSON.stringify({ type: 'CloseStream' }));
    expect((await closed).code).toBe(1000);
    const finals = messages.filter((m) => m.type === 'Results' && m.is_final && m.channel.alternatives[0]!.transcript !== '');
    expect(finals.map((m) => m.type === 'Results' && m.channel.alternatives[0]!.transcript)).toEqual(['Can you repeat that please?']);
    const conns = (await (await fetch(`${sim.url}/__sim/connections`)).json()) as { callKey: string; query: Record<string, string[]> }[];
    expect(conns[conns.length - 1]).toMatchObject({ callKey: 'CA9', query: { extra: ['call_sid:CA9'] } });
    expect((await post('/__sim/reset', {})).status).toBe(204);
    expect(sim.getFaults().firstResultDelayMs).toBe(0);
    expect(sim.connections).toHaveLength(0);
  });

  it('answers CloseStream with the flushed final, then Metadata, then close 1000', async () => {
    const r = await connect(`${sim.wsUrl}?${query}&endpointing=2000`, { headers: auth() });
    if (!('ws' in r)) throw new Error(`refused with ${r.status}`);
    const { messages, closed } = collect(r.ws);
    const audio = await callerSpeechMulaw('Yes please.');
    r.ws.send(audio);
    r.ws.send(JSON.stringify({ type: 'KeepAlive' }));
    r.ws.send(JSON.stringify({ type: 'CloseStream' }));
    expect((await closed).code).toBe(1000);
    const last = messages[messages.length - 1]!;
    expect(last).toMatchObject({ type: 'Metadata', request_id: sim.connections[0]!.requestId, channels: 1, duration: audio.length / 8000 });
    const before = messages[messages.length - 2]!;
    expect(before).toMatchObject({ type: 'Results', is_final: true, channel: { alternatives: [{ transcript: 'hello number 1' }] } });
    expect(sim.connections[0]!.controlMessages).toEqual(['KeepAlive', 'CloseStream']);
    expect(sim.connections[0]!.sent).toEqual(messages);
  });

  it('closes 1011 with NET-0001 when neither audio nor KeepAlive arrives within idleTimeoutMs', async () => {
    const r = await connect(`${sim.wsUrl}?${query}`, { headers: auth() });
    if (!('ws' in r)) throw new Error(`refused with ${r.status}`);
    const started = Date.now();
    const { closed } = collect(r.ws);
    const { code, reason } = await closed;
    expect(code).toBe(1011);
    expect(reason).toContain('NET-0001');
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
  });
});
