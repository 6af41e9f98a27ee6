import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { attachTwilioMediaStreams, TWILIO_MEDIA_STREAM_PATH } from '../../src/twilio/media-stream-server.js';
import type { TwilioMediaStreams } from '../../src/twilio/media-stream-server.js';
import { OutboundPacer } from '../../src/twilio/pacer.js';
import type { TwilioLeg } from '../../src/twilio/twilio-leg.js';

/**
 * The CallLeg playout hooks recording relies on (`onAudioSent`, `onCleared`), on a real
 * TwilioLeg with a simulated Twilio caller at the other end of the socket.
 */

const logger = pino({ level: 'silent' });

/** μ-law whose byte k is k mod 251 (not 0xff), so every frame's bytes can be told apart. */
function ramp(ms: number): Uint8Array {
  return Uint8Array.from({ length: ms * 8 }, (_, k) => k % 251);
}

let server: Server;
let streams: TwilioMediaStreams;
let pacer: OutboundPacer;
let legs: TwilioLeg[];
let sim: TwilioCallerSimulator | undefined;

/** Serves media streams on the test's server, paced by `p`. */
function attach(p: OutboundPacer): void {
  pacer = p;
  legs = [];
  const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  streams = attachTwilioMediaStreams(server, { publicUrl: base, authToken: undefined, logger, pacer, onCall: (leg) => void legs.push(leg) });
}

/** Replaces the media streams and their pacer (a test that needs a pacer of its own). */
async function reattach(p: OutboundPacer): Promise<void> {
  await streams.close();
  pacer.stop();
  attach(p);
}

beforeEach(async () => {
  server = createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  attach(new OutboundPacer());
});
afterEach(async () => {
  sim?.drop();
  sim = undefined;
  await streams.close();
  pacer.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function dial(): Promise<TwilioLeg> {
  sim = await TwilioCallerSimulator.connect(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${TWILIO_MEDIA_STREAM_PATH}`, { customParameters: { agentId: 'agt_1', tenantId: 'ten_1' } });
  await vi.waitFor(() => expect(legs).toHaveLength(1));
  return legs[0]!;
}

describe('TwilioLeg playout hooks', () => {
  it('reports each frame as it leaves, with the time it was sent, byte for byte what the caller received', async () => {
    const leg = await dial();
    const sent: { bytes: Uint8Array; atMs: number }[] = [];
    leg.onAudioSent((frame, atMs) => sent.push({ bytes: frame.slice(), atMs }));
    const t0 = performance.now();
    const audio = ramp(500);
    leg.sendAudio(audio);
    await vi.waitFor(() => expect(sim!.receivedMedia).toHaveLength(25), { timeout: 3000, interval: 20 });
    expect(sent).toHaveLength(25);
    const concatenated = new Uint8Array(sent.flatMap((s) => [...s.bytes]));
    expect(concatenated).toEqual(audio);
    // Paced: the 3-frame burst at once, then one frame per 20 ms slot.
    expect(sent[2]!.atMs - t0).toBeLessThan(10);
    for (let k = 3; k < 25; k++) expect(sent[k]!.atMs - t0).toBeGreaterThanOrEqual((k - 2) * 20 - 10);
    // Sent before the caller got it, never after.
    for (let k = 0; k < 25; k++) expect(sent[k]!.atMs).toBeLessThanOrEqual(sim!.receivedMedia[k]!.at);
  });

  it('reports a clear with the time it was sent, and no frame of the audio it dropped', async () => {
    const leg = await dial();
    const sent: number[] = [];
    const cleared: number[] = [];
    leg.onAudioSent((_frame, atMs) => sent.push(atMs));
    leg.onCleared((atMs) => cleared.push(atMs));
    leg.sendAudio(ramp(2000));
    await new Promise((r) => setTimeout(r, 200));
    const before = performance.now();
    leg.clear();
    expect(cleared).toHaveLength(1);
    expect(cleared[0]).toBeGreaterThanOrEqual(before);
    await vi.waitFor(() => expect(sim!.clears).toHaveLength(1));
    expect(cleared[0]).toBeLessThanOrEqual(sim!.clears[0]!);
    const framesAtClear = sent.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(sent).toHaveLength(framesAtClear);
    expect(framesAtClear).toBeGreaterThanOrEqual(5);
    expect(framesAtClear).toBeLessThan(20);
  });

  it("serves the pacer's due step from the caller's messages when its timer is late", async () => {
    // A pacer whose timer never fires (a loop busy with other sockets' reads): after the
    // burst, frames leave only as the caller's own 20 ms messages arrive and find a step due.
    await reattach(new OutboundPacer({ setTimer: () => 'never', clearTimer: () => {} }));
    const leg = await dial();
    const sent: number[] = [];
    leg.onAudioSent((_frame, atMs) => sent.push(atMs));
    leg.sendAudio(ramp(500));
    expect(sent).toHaveLength(3); // the burst, at once
    await vi.waitFor(() => expect(sim!.receivedMedia).toHaveLength(25), { timeout: 3000, interval: 20 });
    // Still paced: one frame per step, not the rest at the first message.
    const steady = sent.slice(3);
    const span = steady[steady.length - 1]! - steady[0]!;
    expect(span).toBeGreaterThanOrEqual(21 * 20 - 40);
  });

  it('reports nothing once the leg has ended', async () => {
    const leg = await dial();
    let reports = 0;
    leg.onAudioSent(() => reports++);
    leg.onCleared(() => reports++);
    await sim!.hangup();
    await vi.waitFor(() => expect(leg.ended).toBe(true));
    leg.sendAudio(ramp(200));
    leg.clear();
    await new Promise((r) => setTimeout(r, 100));
    expect(reports).toBe(0);
  });
});
