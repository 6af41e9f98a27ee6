import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { InProcessBus, signVonageWebhook } from '@vap/shared';
import { mulawDecode, mulawEncode, pcm16ToBytesLE } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import { StreamRefusedError } from '../../src/simulators/twilio-caller.js';
import { VonageCallerSimulator } from '../../src/simulators/vonage-caller.js';
import { OutboundPacer } from '../../src/twilio/pacer.js';
import { mediaStreamClosed } from '../../src/paced-call-leg.js';
import { attachVonageMediaStreams, VONAGE_MEDIA_STREAM_PATH } from '../../src/vonage/vonage-media-stream-server.js';
import type { VonageMediaStreams } from '../../src/vonage/vonage-media-stream-server.js';
import type { VonageLeg } from '../../src/vonage/vonage-leg.js';

const logger = pino({ level: 'silent' });
const HEADERS = { agentId: 'agt_1', tenantId: 'ten_1', callSid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab', from: '+447700900000', to: '+442079460000', direction: 'inbound' };

function sine(hz: number, rate: number, ms: number, amplitude = 8000): Int16Array {
  const out = new Int16Array((rate * ms) / 1000);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

/** Frequency of a clean sine from its positive-going zero crossings. */
function frequencyHz(pcm: Int16Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) if (pcm[i - 1]! < 0 && pcm[i]! >= 0) crossings++;
  return (crossings * rate) / pcm.length;
}

function concat(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

/** The stretch of `pcm` louder than silence (first to last sample above 500). */
function loudPart(pcm: Int16Array): Int16Array {
  let a = 0;
  let b = pcm.length - 1;
  while (a < pcm.length && Math.abs(pcm[a]!) < 500) a++;
  while (b > a && Math.abs(pcm[b]!) < 500) b--;
  return pcm.subarray(a, b + 1);
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
}

interface Harness {
  base: string;
  uri: string;
  streams: VonageMediaStreams;
  pacer: OutboundPacer;
  nextLeg(): Promise<VonageLeg>;
  close(): Promise<void>;
}

async function harness(opts: { handshakeTimeoutMs?: number; signatureSecret?: string } = {}): Promise<Harness> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pacer = new OutboundPacer();
  const legs: VonageLeg[] = [];
  const waiting: ((leg: VonageLeg) => void)[] = [];
  const streams = attachVonageMediaStreams(server, {
    logger,
    pacer,
    ...(opts.handshakeTimeoutMs ? { handshakeTimeoutMs: opts.handshakeTimeoutMs } : {}),
    signatureSecret: opts.signatureSecret,
    onCall: (leg) => {
      const w = waiting.shift();
      if (w) w(leg);
      else legs.push(leg);
    },
  });
  return {
    base,
    uri: `${base}${VONAGE_MEDIA_STREAM_PATH}?agentId=agt_1&tenantId=ten_1`,
    streams,
    pacer,
    nextLeg: () => {
      const leg = legs.shift();
      return leg ? Promise.resolve(leg) : new Promise((resolve) => waiting.push(resolve));
    },
    close: async () => {
      await streams.close();
      pacer.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function rawClient(url: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(url);
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, closed };
}

let h: Harness;
let sims: VonageCallerSimulator[] = [];

async function dial(opts: { keepAudio?: boolean } = {}): Promise<{ sim: VonageCallerSimulator; leg: VonageLeg }> {
  const sim = await VonageCallerSimulator.connect(h.uri, { headers: HEADERS, ...opts });
  sims.push(sim);
  return { sim, leg: await h.nextLeg() };
}

describe('Vonage WebSocket endpoint', () => {
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => {
    for (const s of sims) await s.hangup();
    sims = [];
    await h.close();
  });

  it('takes the call after websocket:connected, with the NCCO headers as leg parameters and callSid as the call id', async () => {
    const { leg } = await dial();
    expect(leg.provider).toBe('vonage');
    expect(leg.callSid).toBe(HEADERS.callSid);
    expect(leg.parameters).toEqual(HEADERS);
    expect(h.streams.activeLegs).toBe(1);
    await expect(VonageCallerSimulator.connect(`${h.base}/api/v1/webhooks/vonage/other`)).rejects.toEqual(new StreamRefusedError(404));
  });

  it('delivers 640-byte L16 16 kHz caller frames as 160-byte μ-law 8 kHz frames every 20 ms, a tone keeping its pitch', async () => {
    const { sim, leg } = await dial();
    const arrivals: number[] = [];
    const audio: Int16Array[] = [];
    leg.onAudio((mulaw) => {
      arrivals.push(performance.now());
      expect(mulaw.byteLength).toBe(160);
      audio.push(mulawDecode(mulaw));
    });
    await sim.sayL16(pcm16ToBytesLE(sine(440, 16_000, 400)));
    await vi.waitFor(() => expect(arrivals.length).toBeGreaterThan(30), { timeout: 3000, interval: 20 });
    const steps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
    expect(median(steps)).toBeGreaterThanOrEqual(15);
    expect(median(steps)).toBeLessThanOrEqual(25);
    const heard = loudPart(concat(audio));
    expect(heard.length).toBeGreaterThan(8000 * 0.35);
    expect(frequencyHz(heard.subarray(200, heard.length - 200), 8000)).toBeCloseTo(440, -1);
  });

  it('sends agent audio as paced 640-byte L16 frames at real time after a 3-frame burst, a tone keeping its pitch', async () => {
    const { sim, leg } = await dial({ keepAudio: true });
    const t0 = performance.now();
    leg.sendAudio(mulawEncode(sine(1000, 8000, 1000)));
    await vi.waitFor(() => expect(sim.receivedFrames.length).toBe(50), { timeout: 3000, interval: 20 });
    expect(sim.receivedFrames.every((f) => f.bytes === 640)).toBe(true);
    expect(sim.protocolErrors).toEqual([]);
    const at = sim.receivedFrames.map((f) => f.at);
    const steps = at.slice(3).map((t, i) => t - at[i + 2]!);
    expect(median(steps)).toBeGreaterThanOrEqual(16);
    expect(median(steps)).toBeLessThanOrEqual(24);
    for (let k = 3; k < 50; k++) expect(at[k]! - t0).toBeGreaterThanOrEqual((k - 2) * 20 - 10);
    const wide = concat(sim.receivedPcm);
    expect(wide.length).toBe(16_000);
    expect(frequencyHz(wide.subarray(1600, 14_400), 16_000)).toBeCloseTo(1000, -1);
    expect(leg.pacingStats.framesSent).toBe(50);
    await vi.waitFor(() => expect(sim.heardAgentAudioMs).toBeGreaterThanOrEqual(980), { timeout: 2000, interval: 20 });
  });

  it('reports a mark once the audio before it has played at real time', async () => {
    const { leg } = await dial();
    const played: { name: string; at: number }[] = [];
    leg.onMarkPlayed((name) => played.push({ name, at: performance.now() }));
    const t0 = performance.now();
    leg.sendAudio(mulawEncode(sine(500, 8000, 300)));
    leg.sendMark('utt-1');
    await vi.waitFor(() => expect(played.map((p) => p.name)).toEqual(['utt-1']), { timeout: 2000, interval: 10 });
    expect(played[0]!.at - t0).toBeGreaterThanOrEqual(300 - 5);
    expect(played[0]!.at - t0).toBeLessThan(300 + 100);
  });

  it('clear drops the queued audio and the marks not yet played, which are never reported', async () => {
    const { sim, leg } = await dial();
    const played: string[] = [];
    leg.onMarkPlayed((name) => played.push(name));
    leg.sendAudio(mulawEncode(sine(500, 8000, 60)));
    leg.sendMark('sent-then-cut');
    leg.sendAudio(mulawEncode(sine(500, 8000, 1000)));
    leg.sendMark('never-sent');
    leg.clear();
    expect(leg.queuedMs).toBe(0);
    const received = leg.pacingStats.framesSent;
    expect(received).toBeLessThanOrEqual(3); // only the burst had left
    leg.sendMark('after-clear');
    await vi.waitFor(() => expect(played).toEqual(['after-clear']), { timeout: 2000, interval: 10 });
    await new Promise((r) => setTimeout(r, 150));
    expect(sim.receivedFrames.length).toBe(received);
    expect(played).toEqual(['after-clear']);
  });

  it('pause holds the audio and resume sends it on without repeating frames the carrier already had', async () => {
    const { sim, leg } = await dial();
    const played: string[] = [];
    leg.onMarkPlayed((name) => played.push(name));
    leg.sendAudio(mulawEncode(sine(500, 8000, 400)));
    leg.sendMark('end');
    await new Promise((r) => setTimeout(r, 100));
    leg.pause();
    const atPause = leg.pacingStats.framesSent;
    await new Promise((r) => setTimeout(r, 150));
    expect(sim.receivedFrames.length).toBe(atPause);
    expect(atPause).toBeLessThan(20);
    expect(played).toEqual([]);
    leg.resume();
    await vi.waitFor(() => expect(played).toEqual(['end']), { timeout: 2000, interval: 10 });
    // 400 ms is 20 frames: each sent exactly once across the pause.
    expect(sim.receivedFrames.length).toBe(20);
  });

  it('passes websocket:dtmf digits to onDtmf', async () => {
    const { sim, leg } = await dial();
    const digits: string[] = [];
    leg.onDtmf((d) => digits.push(d));
    sim.pressDigit('5');
    sim.pressDigit('#');
    await vi.waitFor(() => expect(digits).toEqual(['5', '#']), { timeout: 2000, interval: 10 });
  });

  it("ends with 'hangup' when Vonage closes the socket, counted in media_stream_closed", async () => {
    const { sim, leg } = await dial();
    const before = mediaStreamClosed.get('hangup');
    const ended = new Promise((resolve) => leg.onEnd(resolve));
    await sim.hangup();
    expect(await ended).toBe('hangup');
    expect(mediaStreamClosed.get('hangup')).toBe(before + 1);
    await vi.waitFor(() => expect(h.streams.activeLegs).toBe(0));
  });

  it("hangup() closes Vonage's socket with 1000 and ends with 'local', once", async () => {
    const { sim, leg } = await dial();
    const reasons: string[] = [];
    leg.onEnd((r) => reasons.push(r));
    await leg.hangup();
    expect(await sim.closed).toBe(1000);
    await leg.hangup();
    expect(reasons).toEqual(['local']);
  });

  it('ignores bad text frames and odd-sized binary frames and keeps the call up', async () => {
    const raw = await rawClient(h.uri);
    raw.ws.send(JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', ...HEADERS, extra: 7 }));
    const leg = await h.nextLeg();
    expect(leg.parameters).toEqual(HEADERS); // non-string values are not headers
    const audio: Uint8Array[] = [];
    leg.onAudio((a) => audio.push(a));
    raw.ws.send('not json');
    raw.ws.send(JSON.stringify({ event: 'websocket:dtmf' }));
    raw.ws.send(JSON.stringify({ event: 'websocket:notify', payload: {} }));
    raw.ws.send(Buffer.alloc(3));
    raw.ws.send(Buffer.alloc(640));
    await vi.waitFor(() => expect(audio.map((a) => a.byteLength)).toEqual([160]), { timeout: 2000, interval: 10 });
    expect(leg.ended).toBe(false);
    raw.ws.close();
  });

  it('closes a socket whose content-type is not L16 16 kHz (1003) or that has no callSid header (1008)', async () => {
    const before = mediaStreamClosed.get('unsupported-format');
    const pcm8k = await rawClient(h.uri);
    pcm8k.ws.send(JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000', ...HEADERS }));
    expect(await pcm8k.closed).toBe(1003);
    const noSid = await rawClient(h.uri);
    noSid.ws.send(JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', agentId: 'agt_1' }));
    expect(await noSid.closed).toBe(1008);
    expect(mediaStreamClosed.get('unsupported-format')).toBe(before + 2);
  });

  it('closes a socket that sends no websocket:connected in time', async () => {
    const quick = await harness({ handshakeTimeoutMs: 150 });
    try {
      const raw = await rawClient(`${quick.base}${VONAGE_MEDIA_STREAM_PATH}`);
      raw.ws.send(Buffer.alloc(640));
      expect(await raw.closed).toBe(1008);
    } finally {
      await quick.close();
    }
  });
});

describe('Vonage WebSocket endpoint with a signature secret', () => {
  const SECRET = 'vonage-gateway-test-secret-000000';

  it('accepts an upgrade carrying a fresh JWT signed with the secret, and refuses a missing, mis-signed or stale one with 403', async () => {
    const signed = await harness({ signatureSecret: SECRET });
    try {
      const before = mediaStreamClosed.get('bad-signature');
      const refused = (authorization?: string) => expect(VonageCallerSimulator.connect(signed.uri, { headers: HEADERS, ...(authorization ? { authorization } : {}) })).rejects.toEqual(new StreamRefusedError(403));
      await refused();
      await refused(`Bearer ${signVonageWebhook({ secret: 'another-secret' })}`);
      await refused(`Bearer ${signVonageWebhook({ secret: SECRET, iat: Math.floor(Date.now() / 1000) - 3600 })}`);
      await refused(`Bearer ${signVonageWebhook({ secret: SECRET, rawBody: 'a body the upgrade does not have' })}`);
      expect(mediaStreamClosed.get('bad-signature')).toBe(before + 4);
      const sim = await VonageCallerSimulator.connect(signed.uri, { headers: HEADERS, authorization: `Bearer ${signVonageWebhook({ secret: SECRET })}` });
      const leg = await signed.nextLeg();
      expect(leg.callSid).toBe(HEADERS.callSid);
      await sim.hangup();
    } finally {
      await signed.close();
    }
  });
});

describe('media gateway with Vonage calls', () => {
  async function closedByHangup(url: string): Promise<number> {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(/svc_telephony_media_stream_closed_total\{reason="hangup"\} (\d+)/.exec(text)?.[1] ?? 0);
  }

  it('serves the Vonage path beside Twilio, counts calls in /healthz and closes in metrics, and hangs up with 1001 on shutdown', async () => {
    const legs: VonageLeg[] = [];
    const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0' }), { bus: new InProcessBus(), logger, onCall: (leg) => legs.push(leg as VonageLeg) });
    const uri = `${gw.url.replace('http', 'ws')}${VONAGE_MEDIA_STREAM_PATH}`;
    const first = await VonageCallerSimulator.connect(uri, { headers: HEADERS });
    const second = await VonageCallerSimulator.connect(uri, { headers: { ...HEADERS, callSid: 'second' } });
    try {
      await vi.waitFor(() => expect(legs).toHaveLength(2));
      expect(legs.map((l) => l.provider)).toEqual(['vonage', 'vonage']);
      expect(await (await fetch(`${gw.url}/healthz`)).json()).toMatchObject({ activeCalls: 2 });
      const before = await closedByHangup(gw.url);
      await first.hangup();
      await vi.waitFor(async () => expect(await closedByHangup(gw.url)).toBe(before + 1), { timeout: 2000, interval: 20 });
      expect(await (await fetch(`${gw.url}/healthz`)).json()).toMatchObject({ activeCalls: 1 });
    } finally {
      await gw.close();
    }
    expect(await second.closed).toBe(1001);
  });
});
