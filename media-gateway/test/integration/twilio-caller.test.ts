import { createServer } from 'node:http';
import type { IncomingMessage, RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { computeTwilioSignature, validateTwilioSignature } from '@vap/shared';
import { TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { readTwiml } from '../../src/simulators/twiml-reader.js';
import { clearMessage, markMessage, mediaMessage } from '../../src/twilio/serializer.js';

const TOKEN = 'test_auth_token_0000000000000000';

function tone(ms: number): Uint8Array {
  const out = new Uint8Array(ms * 8);
  for (let i = 0; i < out.length; i++) out[i] = i % 2 ? 0x0f : 0x8f;
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

type Msg = Record<string, unknown> & { event: string; sequenceNumber?: string; streamSid?: string };

/** A bare WebSocket server playing the gateway: records what the simulated Twilio sends. */
class FakeGateway {
  readonly wss: WebSocketServer;
  readonly messages: { at: number; msg: Msg }[] = [];
  upgrade: IncomingMessage | undefined;
  socket: WebSocket | undefined;
  private readonly connected: Promise<WebSocket>;

  constructor(readonly server: Server) {
    this.wss = new WebSocketServer({ server });
    this.connected = new Promise((resolve) =>
      this.wss.on('connection', (ws, req) => {
        this.upgrade = req;
        this.socket = ws;
        ws.on('message', (data) => this.messages.push({ at: performance.now(), msg: JSON.parse(data.toString()) as Msg }));
        resolve(ws);
      }),
    );
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  ws(): Promise<WebSocket> {
    return this.connected;
  }

  of(event: string): { at: number; msg: Msg }[] {
    return this.messages.filter((m) => m.msg.event === event);
  }
}

async function listen(handler?: RequestListener): Promise<Server> {
  const server = handler ? createServer(handler) : createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

let gw: FakeGateway;
let sim: TwilioCallerSimulator | undefined;

beforeEach(async () => {
  gw = new FakeGateway(await listen());
});
afterEach(async () => {
  sim?.drop();
  sim = undefined;
  gw.wss.close();
  await new Promise((r) => gw.server.close(r));
});

describe('TwilioCallerSimulator, Twilio side of the stream', () => {
  it('connects without the query string, signs the upgrade, then sends connected and start', async () => {
    sim = await TwilioCallerSimulator.connect(`${gw.url}/api/v1/webhooks/twilio/media-stream?agentId=agt_1`, { authToken: TOKEN, customParameters: { agentId: 'agt_1' } });
    await vi.waitFor(() => expect(gw.of('start')).toHaveLength(1));
    expect(gw.upgrade!.url).toBe('/api/v1/webhooks/twilio/media-stream');
    expect(gw.upgrade!.headers['x-twilio-signature']).toBe(computeTwilioSignature(TOKEN, `${gw.url}/api/v1/webhooks/twilio/media-stream`));
    expect(gw.messages[0]!.msg).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    expect(gw.messages[1]!.msg).toEqual({
      event: 'start',
      sequenceNumber: '1',
      streamSid: sim.streamSid,
      start: { streamSid: sim.streamSid, accountSid: sim.accountSid, callSid: sim.callSid, tracks: ['inbound'], customParameters: { agentId: 'agt_1' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
    });
    expect(sim.streamSid).toMatch(/^MZ[0-9a-f]{32}$/);
    expect(sim.callSid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(sim.accountSid).toMatch(/^AC[0-9a-f]{32}$/);
  });

  it('streams silence every 20 ms with sequenceNumber, chunk and timestamp counters (§2.3)', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    await vi.waitFor(() => expect(gw.of('media').length).toBeGreaterThanOrEqual(20), { timeout: 2000, interval: 20 });
    sim.pressDigit('5');
    await vi.waitFor(() => expect(gw.of('dtmf')).toHaveLength(1));
    const numbered = gw.messages.slice(1).map((m) => Number(m.msg.sequenceNumber));
    expect(numbered).toEqual(numbered.map((_, i) => i + 1));
    const media = gw.of('media').map((m) => m.msg as Msg & { media: { track: string; chunk: string; timestamp: string; payload: string } });
    expect(media.map((m) => Number(m.media.chunk))).toEqual(media.map((_, i) => i + 1));
    expect(media.map((m) => Number(m.media.timestamp))).toEqual(media.map((_, i) => i * 20));
    expect(media.every((m) => m.media.track === 'inbound' && m.streamSid === sim!.streamSid)).toBe(true);
    expect(Buffer.from(media[0]!.media.payload, 'base64')).toEqual(Buffer.alloc(160, 0xff));
    const at = gw.of('media').map((m) => m.at);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(median(gaps)).toBeGreaterThanOrEqual(17);
    expect(median(gaps)).toBeLessThanOrEqual(23);
    expect(gw.of('dtmf')[0]!.msg).toMatchObject({ streamSid: sim.streamSid, dtmf: { track: 'inbound_track', digit: '5' } });
  });

  it('say() puts speech into the stream, pads its last frame, and resolves when it has been sent', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    const speech = tone(190); // 9.5 frames
    const { startedAt, endedAt } = await sim.say(speech);
    expect(endedAt).toBeGreaterThan(startedAt);
    const frames = (): { timestamp: number; payload: Buffer }[] =>
      gw.of('media').map((m) => {
        const media = (m.msg as unknown as { media: { timestamp: string; payload: string } }).media;
        return { timestamp: Number(media.timestamp), payload: Buffer.from(media.payload, 'base64') };
      });
    // Sent is not yet received: wait for the frame after the speech to cross the socket.
    await vi.waitFor(() => expect(frames().findIndex((f) => f.payload[0] === 0x8f)).toBeLessThan(frames().length - 10), { timeout: 1000, interval: 10 });
    const all = frames();
    const first = all.findIndex((f) => f.payload[0] === 0x8f);
    const spoken = Buffer.concat(all.slice(first, first + 10).map((f) => f.payload));
    expect(spoken.subarray(0, speech.length)).toEqual(Buffer.from(speech));
    expect(spoken.subarray(speech.length).every((b) => b === 0xff)).toBe(true);
    expect(all.every((f) => f.payload.length === 160)).toBe(true);
    // Ten frames of presentation time, however the event loop was doing.
    expect(all[first + 9]!.timestamp - all[first]!.timestamp).toBe(180);
  });

  it('plays agent audio at real time and echoes a mark once the audio before it has played', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    const ws = await gw.ws();
    const t0 = performance.now();
    ws.send(mediaMessage(sim.streamSid, tone(400))); // any length is accepted (§2.2)
    ws.send(markMessage(sim.streamSid, 'end-of-utterance'));
    await vi.waitFor(() => expect(gw.of('mark')).toHaveLength(1), { timeout: 2000, interval: 10 });
    const echo = gw.of('mark')[0]!;
    expect(echo.msg).toMatchObject({ event: 'mark', streamSid: sim.streamSid, mark: { name: 'end-of-utterance' } });
    expect(echo.at - t0).toBeGreaterThanOrEqual(400 - 5);
    expect(echo.at - t0).toBeLessThan(400 + 100);
    expect(sim.heardAgentAudioMs).toBe(400);
    expect(sim.firstAgentAudioAfter(t0 - 1)).toBeGreaterThanOrEqual(t0);
    expect(sim.firstAgentAudioAfter(performance.now())).toBeNull();
  });

  it('echoes a mark at once when nothing is queued, and does not count silence as heard', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    const ws = await gw.ws();
    ws.send(mediaMessage(sim.streamSid, new Uint8Array(800).fill(0xff)));
    await vi.waitFor(() => expect(sim!.playbackQueuedMs).toBe(0), { timeout: 2000, interval: 10 });
    ws.send(markMessage(sim.streamSid, 'idle'));
    await vi.waitFor(() => expect(gw.of('mark')).toHaveLength(1), { timeout: 1000, interval: 5 });
    expect(sim.heardAgentAudioMs).toBe(0);
    expect(sim.agentAudio).toEqual([]);
  });

  it('clear empties the playback queue and returns pending marks immediately', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    const ws = await gw.ws();
    ws.send(mediaMessage(sim.streamSid, tone(1000)));
    ws.send(markMessage(sim.streamSid, 'a'));
    ws.send(mediaMessage(sim.streamSid, tone(1000)));
    ws.send(markMessage(sim.streamSid, 'b'));
    await new Promise((r) => setTimeout(r, 150));
    const cleared = new Promise<number>((resolve) => sim!.once('clear', resolve));
    ws.send(clearMessage(sim.streamSid));
    const at = await cleared;
    expect(sim.playbackQueuedMs).toBe(0);
    expect(sim.marksEchoed.map((m) => [m.name, m.cut])).toEqual([['a', true], ['b', true]]);
    await vi.waitFor(() => expect(gw.of('mark').map((m) => (m.msg as unknown as { mark: { name: string } }).mark.name)).toEqual(['a', 'b']));
    expect(sim.clears).toEqual([at]);
    // The caller heard the 150 ms before the clear, not the 2 s that were queued.
    expect(sim.heardAgentAudioMs).toBeGreaterThan(100);
    expect(sim.heardAgentAudioMs).toBeLessThan(300);
    // After a clear, new media plays immediately (§2.3 rule 5).
    const t1 = performance.now();
    ws.send(mediaMessage(sim.streamSid, tone(40)));
    await vi.waitFor(() => expect(sim!.firstAgentAudioAfter(t1)).not.toBeNull(), { timeout: 1000, interval: 10 });
    expect(sim.firstAgentAudioAfter(t1)! - t1).toBeLessThan(20);
  });

  it('records messages Twilio would reject (binary, extra fields, wrong streamSid) and ignores them', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    const ws = await gw.ws();
    ws.send(Buffer.from([1, 2, 3]));
    ws.send(JSON.stringify({ event: 'clear', streamSid: sim.streamSid, extra: true }));
    ws.send(clearMessage('MZwrong'));
    ws.send(markMessage(sim.streamSid, 'still-works'));
    await vi.waitFor(() => expect(gw.of('mark')).toHaveLength(1));
    expect(sim.protocolErrors).toHaveLength(3);
    expect(sim.clears).toEqual([]);
  });

  it('hangup() sends stop and closes with 1000; a gateway close resolves `closed` with its code', async () => {
    sim = await TwilioCallerSimulator.connect(gw.url);
    expect(await sim.hangup()).toBe(1000);
    expect(gw.messages.at(-1)!.msg).toMatchObject({ event: 'stop', streamSid: sim.streamSid, stop: { callSid: sim.callSid, accountSid: sim.accountSid } });
    await expect(sim.say(tone(20))).rejects.toThrow(/ended/);

    const second = await TwilioCallerSimulator.connect(gw.url);
    const pending = second.say(tone(2000));
    const closedEvent = new Promise<number>((resolve) => second.once('closed', resolve));
    await vi.waitFor(() => expect(gw.wss.clients.size).toBe(1));
    for (const client of gw.wss.clients) client.close(1000);
    expect(await second.closed).toBe(1000);
    expect(await closedEvent).toBe(1000);
    await expect(pending).rejects.toThrow(/ended/);
  });
});

describe('TwilioCallerSimulator.placeCall', () => {
  const seen: { url: string; signatureOk: boolean; params: Record<string, string> }[] = [];
  let twiml = '';
  let cp: Server;

  beforeEach(async () => {
    seen.length = 0;
    cp = await listen((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const params = Object.fromEntries(new URLSearchParams(body));
        const url = `http://127.0.0.1:${(cp.address() as AddressInfo).port}${req.url}`;
        seen.push({ url: req.url!, params, signatureOk: validateTwilioSignature({ authToken: TOKEN, url, params, signature: req.headers['x-twilio-signature'] as string }) });
        res.writeHead(200, { 'Content-Type': 'text/xml' }).end(twiml);
      });
    });
  });
  afterEach(async () => {
    await new Promise((r) => cp.close(r));
  });

  const cpUrl = (): string => `http://127.0.0.1:${(cp.address() as AddressInfo).port}`;

  it('posts a signed voice webhook and follows <Connect><Stream> with its parameters', async () => {
    twiml = `<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="${gw.url}/api/v1/webhooks/twilio/media-stream?agentId=agt_1&amp;tenantId=ten_1"><Parameter name="agentId" value="agt_1"/><Parameter name="tenantId" value="ten_1"/><Parameter name="note" value="a &amp; b"/></Stream></Connect><Say>Goodbye.</Say></Response>`;
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: cpUrl(), authToken: TOKEN, from: '+15551230001', to: '+15551230002' });
    expect(placed.rejected).toBe(false);
    if (placed.rejected) return;
    sim = placed.call;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ url: '/webhooks/twilio/voice', signatureOk: true, params: { CallSid: sim.callSid, AccountSid: sim.accountSid, From: '+15551230001', To: '+15551230002', CallStatus: 'ringing', Direction: 'inbound', ApiVersion: '2010-04-01' } });
    await vi.waitFor(() => expect(gw.of('start')).toHaveLength(1));
    expect(gw.upgrade!.url).toBe('/api/v1/webhooks/twilio/media-stream');
    expect(gw.of('start')[0]!.msg).toMatchObject({ start: { callSid: sim.callSid, customParameters: { agentId: 'agt_1', tenantId: 'ten_1', note: 'a & b' } } });
  });

  it('returns { rejected, say } when the webhook answers <Say> and <Hangup/>', async () => {
    twiml = '<?xml version="1.0" encoding="UTF-8"?><Response><Say voice="Polly.Joanna">This number is not in service.</Say><Hangup/></Response>';
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: cpUrl(), authToken: TOKEN, from: '+15551230001', to: '+15551230009', callSid: 'CA00000000000000000000000000000001' });
    expect(placed).toMatchObject({ rejected: true, say: 'This number is not in service.' });
    expect(seen[0]!.params.CallSid).toBe('CA00000000000000000000000000000001');
  });

  it('refuses TwiML it cannot follow', () => {
    expect(() => readTwiml('<Response><Gather/></Response>')).toThrow();
    expect(() => readTwiml('not xml')).toThrow();
  });
});
