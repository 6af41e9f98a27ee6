import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { computeTwilioSignature, InProcessBus } from '@vap/shared';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import { StreamRefusedError, TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { attachTwilioMediaStreams, TWILIO_MEDIA_STREAM_PATH } from '../../src/twilio/media-stream-server.js';
import type { TwilioMediaStreams } from '../../src/twilio/media-stream-server.js';
import { mediaStreamClosed } from '../../src/twilio/twilio-leg.js';
import type { TwilioLeg } from '../../src/twilio/twilio-leg.js';
import { endpointHarness, rawClient } from '../stream-test-kit.js';
import type { EndpointHarness } from '../stream-test-kit.js';
import { mediaStreamLegContract } from '../contracts/media-stream-leg.contract.js';

const logger = pino({ level: 'silent' });
const TOKEN = 'test_auth_token_0000000000000000';

interface Harness extends EndpointHarness<TwilioLeg> {
  streamUrl: string;
  streams: TwilioMediaStreams;
}

/** A plain HTTP server with the media-stream endpoint; legs are queued for the test to drive. */
async function harness(opts: { authToken?: string; publicUrl?: string; handshakeTimeoutMs?: number } = {}): Promise<Harness> {
  let base = '';
  const h = await endpointHarness<TwilioLeg>((server, pacer, onCall) => {
    base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return attachTwilioMediaStreams(server, { publicUrl: opts.publicUrl ?? base, authToken: opts.authToken, logger, pacer, handshakeTimeoutMs: opts.handshakeTimeoutMs, onCall });
  });
  return { ...h, streamUrl: `${h.base}${TWILIO_MEDIA_STREAM_PATH}?agentId=agt_1&tenantId=ten_1` };
}

function startText(streamSid: string, mediaFormat = { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 }): string {
  return JSON.stringify({ event: 'start', sequenceNumber: '1', streamSid, start: { streamSid, accountSid: 'AC1', callSid: 'CAraw', tracks: ['inbound'], customParameters: { via: 'raw' }, mediaFormat } });
}

let h: Harness;
let sims: TwilioCallerSimulator[] = [];

async function dial(opts: Parameters<typeof TwilioCallerSimulator.connect>[1] = {}): Promise<{ sim: TwilioCallerSimulator; leg: TwilioLeg }> {
  const sim = await TwilioCallerSimulator.connect(h.streamUrl, { customParameters: { agentId: 'agt_1', tenantId: 'ten_1' }, ...opts });
  sims.push(sim);
  return { sim, leg: await h.nextLeg() };
}

describe('Twilio media stream server', () => {
  beforeEach(async () => {
    h = await harness({ authToken: TOKEN });
  });
  afterEach(async () => {
    for (const s of sims) s.drop();
    sims = [];
    await h.close();
  });

  it('upgrades on the media-stream path only, ignoring the query string', async () => {
    await expect(TwilioCallerSimulator.connect(`${h.base}/api/v1/webhooks/twilio/other`)).rejects.toEqual(new StreamRefusedError(404));
    const raw = await rawClient(`${h.base}${TWILIO_MEDIA_STREAM_PATH}?agentId=agt_1`);
    raw.ws.close(1000);
    expect(await raw.closed).toBe(1000);
  });

  it('refuses an upgrade whose X-Twilio-Signature is wrong with 403', async () => {
    const before = mediaStreamClosed.get('bad-signature');
    await expect(TwilioCallerSimulator.connect(h.streamUrl, { authToken: 'not-the-token' })).rejects.toEqual(new StreamRefusedError(403));
    expect(mediaStreamClosed.get('bad-signature')).toBe(before + 1);
  });

  it('accepts a correctly signed upgrade and hands start parameters to onCall', async () => {
    const { sim, leg } = await dial({ authToken: TOKEN, callSid: 'CA0123456789abcdef0123456789abcdef' });
    expect(leg.provider).toBe('twilio');
    expect(leg.callSid).toBe('CA0123456789abcdef0123456789abcdef');
    expect(leg.streamSid).toBe(sim.streamSid);
    expect(leg.streamSid).toMatch(/^MZ[0-9a-f]{32}$/);
    expect(leg.parameters).toEqual({ agentId: 'agt_1', tenantId: 'ten_1' });
    expect(h.streams.activeLegs).toBe(1);
  });

  it('checks the signature over the configured public URL, not the address the socket reached', async () => {
    const proxied = await harness({ authToken: TOKEN, publicUrl: 'wss://gw.example.com' });
    try {
      const url = `${proxied.base}${TWILIO_MEDIA_STREAM_PATH}`;
      // Signed over the local address: what a proxy-unaware validator would accept.
      await expect(TwilioCallerSimulator.connect(url, { authToken: TOKEN })).rejects.toEqual(new StreamRefusedError(403));
      const raw = await rawClient(url, { 'X-Twilio-Signature': computeTwilioSignature(TOKEN, `wss://gw.example.com${TWILIO_MEDIA_STREAM_PATH}`) });
      raw.ws.close(1000);
      expect(await raw.closed).toBe(1000);
    } finally {
      await proxied.close();
    }
  });

  it('ignores bad messages and media of another stream, and keeps the call up', async () => {
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    raw.ws.send(startText('MZraw'));
    const leg = await h.nextLeg();
    const audio: Uint8Array[] = [];
    leg.onAudio((a) => audio.push(a));
    raw.ws.send('not json');
    raw.ws.send(JSON.stringify({ event: 'media', streamSid: 'MZother', media: { track: 'inbound', payload: 'AAAA' } }));
    raw.ws.send(JSON.stringify({ event: 'media', streamSid: 'MZraw', media: {} }));
    raw.ws.send(JSON.stringify({ event: 'something-new', streamSid: 'MZraw' }));
    raw.ws.send(Buffer.from([1, 2, 3]));
    raw.ws.send(JSON.stringify({ event: 'media', streamSid: 'MZraw', media: { track: 'inbound', chunk: '1', timestamp: '0', payload: Buffer.from([7, 8]).toString('base64') } }));
    await vi.waitFor(() => expect(audio.map((a) => [...a])).toEqual([[7, 8]]), { timeout: 2000, interval: 10 });
    expect(leg.ended).toBe(false);
    expect(leg.parameters).toEqual({ via: 'raw' });
    raw.ws.close();
  });

  it('closes a stream whose format is not μ-law 8 kHz mono', async () => {
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(startText('MZpcm', { encoding: 'audio/x-l16', sampleRate: 16000, channels: 1 }));
    expect(await raw.closed).toBe(1003);
  });

  it('refuses a start it cannot read at once (1008 "invalid start", counted as bad-handshake), not after the handshake timeout', async () => {
    const before = { bad: mediaStreamClosed.get('bad-handshake'), timeout: mediaStreamClosed.get('handshake-timeout') };
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    const sent = Date.now();
    raw.ws.send(JSON.stringify({ event: 'start', sequenceNumber: '1', streamSid: 'MZbad', start: { streamSid: 'MZbad' } }));
    expect(await raw.closedWith).toEqual({ code: 1008, reason: 'invalid start' });
    expect(Date.now() - sent).toBeLessThan(2000);
    expect(mediaStreamClosed.get('bad-handshake')).toBe(before.bad + 1);
    expect(mediaStreamClosed.get('handshake-timeout')).toBe(before.timeout);
  });

  it('closes a socket that sends no start in time', async () => {
    const quick = await harness({ handshakeTimeoutMs: 150 });
    try {
      const raw = await rawClient(`${quick.base}${TWILIO_MEDIA_STREAM_PATH}`);
      raw.ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
      expect(await raw.closed).toBe(1008);
    } finally {
      await quick.close();
    }
  });
});

describe('media gateway with Twilio streams', () => {
  it('counts active calls in /healthz and hands legs to deps.onCall', async () => {
    const bus = new InProcessBus();
    const legs: TwilioLeg[] = [];
    const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0' }), { bus, logger, onCall: (leg) => legs.push(leg as TwilioLeg) });
    const sim = await TwilioCallerSimulator.connect(`${gw.url.replace('http', 'ws')}${TWILIO_MEDIA_STREAM_PATH}`, { customParameters: { agentId: 'agt_9' } });
    try {
      await vi.waitFor(() => expect(legs).toHaveLength(1));
      expect(await (await fetch(`${gw.url}/healthz`)).json()).toMatchObject({ activeCalls: 1 });
      expect(legs[0]!.parameters).toEqual({ agentId: 'agt_9' });
    } finally {
      await gw.close();
    }
    // Shutdown hangs up the calls (1001: going away).
    expect(await sim.closed).toBe(1001);
  });
});

mediaStreamLegContract('Twilio', async () => {
  const w = await harness({ authToken: TOKEN });
  return {
    dial: async () => {
      const sim = await TwilioCallerSimulator.connect(w.streamUrl, { customParameters: { agentId: 'agt_1', tenantId: 'ten_1' }, authToken: TOKEN });
      return { sim, leg: await w.nextLeg() };
    },
    activeLegs: () => w.streams.activeLegs,
    close: () => w.close(),
  };
});
