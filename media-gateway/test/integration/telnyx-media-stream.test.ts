import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InProcessBus } from '@vap/shared';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import { mediaStreamClosed } from '../../src/paced-call-leg.js';
import { StreamRefusedError } from '../../src/simulators/mulaw-caller.js';
import { TelnyxCallerSimulator } from '../../src/simulators/telnyx-caller.js';
import type { TelnyxCallerOptions } from '../../src/simulators/telnyx-caller.js';
import { attachTelnyxMediaStreams, TELNYX_MEDIA_STREAM_PATH } from '../../src/telnyx/media-stream-server.js';
import type { TelnyxLeg } from '../../src/telnyx/telnyx-leg.js';
import { endpointHarness, rawClient } from '../stream-test-kit.js';
import type { EndpointHarness } from '../stream-test-kit.js';
import { mediaStreamLegContract } from '../contracts/media-stream-leg.contract.js';

const logger = pino({ level: 'silent' });

/** μ-law with a different byte per 20 ms frame, so order can be checked frame by frame. */
function numberedFrames(n: number): Uint8Array {
  const out = new Uint8Array(n * 160);
  for (let k = 0; k < n; k++) out.fill(0x10 + k, k * 160, (k + 1) * 160);
  return out;
}

interface Harness extends EndpointHarness<TelnyxLeg> {
  streamUrl: string;
}

async function harness(opts: { handshakeTimeoutMs?: number } = {}): Promise<Harness> {
  const h = await endpointHarness<TelnyxLeg>((server, pacer, onCall) => attachTelnyxMediaStreams(server, { logger, pacer, handshakeTimeoutMs: opts.handshakeTimeoutMs, onCall }));
  return { ...h, streamUrl: `${h.base}${TELNYX_MEDIA_STREAM_PATH}?agentId=agt_q&tenantId=ten_q` };
}

function startText(streamId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    event: 'start',
    sequence_number: '1',
    stream_id: streamId,
    start: { call_control_id: 'v3:raw', from: '+15550001111', to: '+15550002222', custom_parameters: { via: 'raw' }, media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 }, ...extra },
  });
}

const ROUTING = { agentId: 'agt_1', tenantId: 'ten_1', callSid: 'v3:call-1', from: '+15551230001', to: '+15551230002', direction: 'inbound' };

let h: Harness;
let sims: TelnyxCallerSimulator[] = [];

async function dial(opts: TelnyxCallerOptions = {}): Promise<{ sim: TelnyxCallerSimulator; leg: TelnyxLeg }> {
  const sim = await TelnyxCallerSimulator.connect(h.streamUrl, { customParameters: ROUTING, callControlId: 'v3:call-1', ...opts });
  sims.push(sim);
  return { sim, leg: await h.nextLeg() };
}

describe('Telnyx media stream server', () => {
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => {
    for (const s of sims) s.drop();
    sims = [];
    await h.close();
  });

  it('upgrades on its own path only', async () => {
    await expect(TelnyxCallerSimulator.connect(`${h.base}/api/v1/webhooks/twilio/media-stream`)).rejects.toEqual(new StreamRefusedError(404));
  });

  it('hands a leg to onCall after start, with the TeXML parameters as the session expects them', async () => {
    const { sim, leg } = await dial();
    expect(leg.provider).toBe('telnyx');
    expect(leg.callSid).toBe('v3:call-1');
    expect(leg.streamId).toBe(sim.streamId);
    expect(leg.callControlId).toBe('v3:call-1');
    expect(leg.parameters).toEqual(ROUTING);
    expect(h.streams.activeLegs).toBe(1);
    expect(sim.protocolErrors).toEqual([]);
  });

  it('fills missing parameters from client_state, the start fields and the URL query; custom parameters win', async () => {
    const clientState = Buffer.from(JSON.stringify({ tenantId: 'ten_state', note: 'vip', n: 1 })).toString('base64');
    const { leg } = await dial({ customParameters: { agentId: 'agt_custom' }, clientState, keepQuery: true, callControlId: 'v3:cc-9', from: '+15550000001', to: '+15550000002' });
    expect(leg.parameters).toEqual({ agentId: 'agt_custom', tenantId: 'ten_state', note: 'vip', callSid: 'v3:cc-9', from: '+15550000001', to: '+15550000002' });
    expect(leg.callSid).toBe('v3:cc-9');
  });

  it('puts caller frames that arrive out of order back in chunk order', async () => {
    const { sim, leg } = await dial({ swapEvery: 3 });
    const frames: number[] = [];
    leg.onAudio((mulaw) => frames.push(mulaw[0]!));
    const speech = numberedFrames(12);
    await sim.say(speech);
    await vi.waitFor(() => expect(frames.filter((b) => b !== 0xff)).toHaveLength(12), { timeout: 2000, interval: 20 });
    expect(frames.filter((b) => b !== 0xff)).toEqual(Array.from({ length: 12 }, (_, k) => 0x10 + k));
    expect(leg.reorderStats).toEqual({ dropped: 0, skipped: 0, resyncs: 0 });
  });

  it('keeps hearing the caller when the chunk numbering starts again mid-call', async () => {
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(startText('st-restart'));
    const leg = await h.nextLeg();
    const frames: number[] = [];
    leg.onAudio((mulaw) => frames.push(mulaw[0]!));
    const media = (chunk: number, byte: number): string =>
      JSON.stringify({ event: 'media', stream_id: 'st-restart', media: { track: 'inbound', chunk: String(chunk), payload: Buffer.alloc(160, byte).toString('base64') } });
    for (let k = 0; k < 4; k++) raw.ws.send(media(7000 + k, 0x10 + k));
    // The counter restarts; a swapped pair right after it is still put in order.
    for (const [chunk, byte] of [[1, 0x20], [3, 0x22], [2, 0x21], [4, 0x23]] as const) raw.ws.send(media(chunk, byte));
    await vi.waitFor(() => expect(frames).toHaveLength(8), { timeout: 2000, interval: 10 });
    expect(frames).toEqual([0x10, 0x11, 0x12, 0x13, 0x20, 0x21, 0x22, 0x23]);
    expect(leg.reorderStats).toEqual({ dropped: 0, skipped: 0, resyncs: 1 });
    raw.ws.close();
  });

  it('ignores bad messages, frames of another stream and binary frames, and keeps the call up', async () => {
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(JSON.stringify({ event: 'connected', version: '1.0.0' }));
    raw.ws.send(startText('st-raw'));
    const leg = await h.nextLeg();
    const audio: number[][] = [];
    const digits: string[] = [];
    leg.onAudio((a) => audio.push([...a]));
    leg.onDtmf((d) => digits.push(d));
    raw.ws.send('not json');
    raw.ws.send(JSON.stringify({ event: 'media', stream_id: 'st-other', media: { track: 'inbound', chunk: '1', payload: 'AAAA' } }));
    raw.ws.send(JSON.stringify({ event: 'media', stream_id: 'st-raw', media: {} }));
    raw.ws.send(JSON.stringify({ event: 'dtmf', stream_id: 'st-raw', dtmf: { digit: 'x' } }));
    raw.ws.send(JSON.stringify({ event: 'something-new', stream_id: 'st-raw' }));
    raw.ws.send(JSON.stringify({ event: 'error', stream_id: 'st-raw', payload: { code: 100003, title: 'malformed_frame' } }));
    raw.ws.send(Buffer.from([1, 2, 3]));
    raw.ws.send(JSON.stringify({ event: 'media', stream_id: 'st-raw', media: { track: 'outbound', chunk: '1', payload: Buffer.from([9]).toString('base64') } }));
    raw.ws.send(JSON.stringify({ event: 'media', stream_id: 'st-raw', media: { track: 'inbound', chunk: '1', timestamp: '0', payload: Buffer.from([7, 8]).toString('base64') } }));
    raw.ws.send(JSON.stringify({ event: 'dtmf', stream_id: 'st-raw' }));
    raw.ws.send(JSON.stringify({ event: 'dtmf', stream_id: 'st-raw', dtmf: { digit: '3' } }));
    // The unconfirmed alternative shape (§2.1) is read too.
    raw.ws.send(JSON.stringify({ event: 'dtmf', stream_id: 'st-raw', payload: { digit: '9' } }));
    await vi.waitFor(() => expect(digits).toEqual(['3', '9']), { timeout: 2000, interval: 10 });
    expect(audio).toEqual([[7, 8]]);
    expect(leg.ended).toBe(false);
    expect(leg.parameters).toEqual({ agentId: 'agt_q', tenantId: 'ten_q', callSid: 'v3:raw', from: '+15550001111', to: '+15550002222', via: 'raw' });
    raw.ws.close();
  });

  it('closes a stream whose format is not PCMU 8 kHz mono, and counts it', async () => {
    const before = mediaStreamClosed.get('unsupported-format');
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(startText('st-pcma', { media_format: { encoding: 'PCMA', sample_rate: 8000, channels: 1 } }));
    expect(await raw.closed).toBe(1003);
    expect(mediaStreamClosed.get('unsupported-format')).toBe(before + 1);
  });

  it('closes a socket that sends no start in time', async () => {
    const quick = await harness({ handshakeTimeoutMs: 150 });
    try {
      const before = mediaStreamClosed.get('handshake-timeout');
      const raw = await rawClient(`${quick.base}${TELNYX_MEDIA_STREAM_PATH}`);
      raw.ws.send(JSON.stringify({ event: 'connected', version: '1.0.0' }));
      raw.ws.send(JSON.stringify({ event: 'media', media: { payload: 'AA==' } }));
      expect(await raw.closed).toBe(1008);
      expect(mediaStreamClosed.get('handshake-timeout')).toBe(before + 1);
    } finally {
      await quick.close();
    }
  });

  it('refuses a start it cannot read at once (1008 "invalid start", counted as bad-handshake), not after the handshake timeout', async () => {
    const before = { bad: mediaStreamClosed.get('bad-handshake'), timeout: mediaStreamClosed.get('handshake-timeout') };
    const raw = await rawClient(h.streamUrl);
    raw.ws.send(JSON.stringify({ event: 'connected', version: '1.0.0' }));
    raw.ws.send('not json');
    const sent = Date.now();
    raw.ws.send(startText('st-bad', { media_format: { encoding: 'PCMU', sample_rate: 'eight thousand', channels: 1 } }));
    expect(await raw.closedWith).toEqual({ code: 1008, reason: 'invalid start' });
    // The harness waits 10 s for a start: the refusal is the bad start's, not the timeout's.
    expect(Date.now() - sent).toBeLessThan(2000);
    expect(mediaStreamClosed.get('bad-handshake')).toBe(before.bad + 1);
    expect(mediaStreamClosed.get('handshake-timeout')).toBe(before.timeout);
    expect(h.streams.activeLegs).toBe(0);
  });
});

describe('media gateway with Telnyx streams', () => {
  it('serves Telnyx beside Twilio on the one port, counts the call in /healthz and closes it on shutdown', async () => {
    const legs: TelnyxLeg[] = [];
    const gw = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' }), { bus: new InProcessBus(), logger, onCall: (leg) => legs.push(leg as TelnyxLeg) });
    const sim = await TelnyxCallerSimulator.connect(`${gw.url.replace('http', 'ws')}${TELNYX_MEDIA_STREAM_PATH}`, { customParameters: { agentId: 'agt_9' } });
    try {
      await vi.waitFor(() => expect(legs).toHaveLength(1));
      expect(legs[0]!.provider).toBe('telnyx');
      expect(await (await fetch(`${gw.url}/healthz`)).json()).toMatchObject({ activeCalls: 1 });
    } finally {
      await gw.close();
    }
    expect(await sim.closed).toBe(1001);
  });
});

mediaStreamLegContract('Telnyx', async () => {
  const w = await harness();
  return {
    dial: async () => {
      const sim = await TelnyxCallerSimulator.connect(w.streamUrl, { customParameters: ROUTING });
      return { sim, leg: await w.nextLeg() };
    },
    activeLegs: () => w.streams.activeLegs,
    close: () => w.close(),
  };
});
