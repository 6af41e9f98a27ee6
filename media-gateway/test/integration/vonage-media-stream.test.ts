import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InProcessBus, signVonageWebhook } from '@vap/shared';
import { mulawDecode, mulawEncode, pcm16ToBytesLE } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import { mediaStreamClosed } from '../../src/paced-call-leg.js';
import { StreamRefusedError } from '../../src/simulators/mulaw-caller.js';
import { VonageCallerSimulator } from '../../src/simulators/vonage-caller.js';
import { attachVonageMediaStreams, VONAGE_MEDIA_STREAM_PATH } from '../../src/vonage/vonage-media-stream-server.js';
import type { VonageLeg } from '../../src/vonage/vonage-leg.js';
import { L16_FRAME_BYTES } from '../../src/vonage/l16-converter.js';
import { endpointHarness, rawClient, sine, sineTone } from '../stream-test-kit.js';
import type { EndpointHarness } from '../stream-test-kit.js';
import { mediaStreamLegContract } from '../contracts/media-stream-leg.contract.js';

const logger = pino({ level: 'silent' });
const HEADERS = { agentId: 'agt_1', tenantId: 'ten_1', callSid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab', from: '+447700900000', to: '+442079460000', direction: 'inbound' };

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

interface Harness extends EndpointHarness<VonageLeg> {
  uri: string;
}

async function harness(opts: { handshakeTimeoutMs?: number; signatureSecret?: string } = {}): Promise<Harness> {
  const h = await endpointHarness<VonageLeg>((server, pacer, onCall) =>
    attachVonageMediaStreams(server, { logger, pacer, handshakeTimeoutMs: opts.handshakeTimeoutMs, signatureSecret: opts.signatureSecret, onCall }),
  );
  return { ...h, uri: `${h.base}${VONAGE_MEDIA_STREAM_PATH}?agentId=agt_1&tenantId=ten_1` };
}

// Vonage has no marks or clear at the carrier and carries L16 16 kHz: the contract checks
// the leg's local marks and the transcoded audio instead of carrier echoes and exact bytes.
mediaStreamLegContract('Vonage', async () => {
  const w = await harness();
  return {
    dial: async () => ({ sim: await VonageCallerSimulator.connect(w.uri, { headers: HEADERS }), leg: await w.nextLeg() }),
    activeLegs: () => w.streams.activeLegs,
    close: () => w.close(),
    carrier: { tone: sineTone, frameBytes: L16_FRAME_BYTES, transcodes: true, localMarks: true },
  };
});

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

  // Cadence and pacing are the contract's; these check the L16 16 kHz ↔ μ-law 8 kHz conversion keeps a tone's pitch.
  it('delivers 640-byte L16 16 kHz caller frames as 160-byte μ-law 8 kHz frames, a tone keeping its pitch', async () => {
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
    const heard = loudPart(concat(audio));
    expect(heard.length).toBeGreaterThan(8000 * 0.35);
    expect(frequencyHz(heard.subarray(200, heard.length - 200), 8000)).toBeCloseTo(440, -1);
  });

  it('sends agent audio as 640-byte binary L16 16 kHz frames, a tone keeping its pitch', async () => {
    const { sim, leg } = await dial({ keepAudio: true });
    leg.sendAudio(mulawEncode(sine(1000, 8000, 1000)));
    await vi.waitFor(() => expect(sim.receivedMedia.length).toBe(50), { timeout: 3000, interval: 20 });
    expect(sim.receivedMedia.every((f) => f.bytes === 640)).toBe(true);
    expect(sim.protocolErrors).toEqual([]);
    const wide = concat(sim.receivedPcm);
    expect(wide.length).toBe(16_000);
    expect(frequencyHz(wide.subarray(1600, 14_400), 16_000)).toBeCloseTo(1000, -1);
    expect(leg.pacingStats.framesSent).toBe(50);
    await vi.waitFor(() => expect(sim.heardAgentAudioMs).toBeGreaterThanOrEqual(980), { timeout: 2000, interval: 20 });
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

  it('closes a socket whose content-type is not L16 16 kHz (1003) or that has no callSid header (1008), each counted under its reason', async () => {
    const before = mediaStreamClosed.get('unsupported-format');
    const badBefore = mediaStreamClosed.get('bad-handshake');
    const pcm8k = await rawClient(h.uri);
    pcm8k.ws.send(JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000', ...HEADERS }));
    expect(await pcm8k.closed).toBe(1003);
    const noSid = await rawClient(h.uri);
    noSid.ws.send(JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', agentId: 'agt_1' }));
    expect(await noSid.closed).toBe(1008);
    expect(mediaStreamClosed.get('unsupported-format')).toBe(before + 1);
    expect(mediaStreamClosed.get('bad-handshake')).toBe(badBefore + 1);
  });

  it('refuses a websocket:connected it cannot read at once (1008 "invalid start", counted as bad-handshake)', async () => {
    const before = mediaStreamClosed.get('bad-handshake');
    const raw = await rawClient(h.uri);
    const sent = Date.now();
    raw.ws.send(JSON.stringify({ event: 'websocket:connected', ...HEADERS }));
    expect(await raw.closedWith).toEqual({ code: 1008, reason: 'invalid start' });
    expect(Date.now() - sent).toBeLessThan(2000);
    expect(mediaStreamClosed.get('bad-handshake')).toBe(before + 1);
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
