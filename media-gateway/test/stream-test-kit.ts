import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { mulawEncode } from '@vap/voice-pipeline';
import type { MediaStreamEndpoint } from '../src/media-stream-endpoint.js';
import { OutboundPacer } from '../src/twilio/pacer.js';

/**
 * What the carrier media-stream tests (Twilio, Telnyx, Vonage) share: a bare HTTP server with one
 * carrier endpoint attached, legs queued for the test to drive, raw sockets for what the
 * simulators refuse to send, and loud μ-law.
 */

/** Loud, clearly non-silent μ-law (alternating near full-scale codes). */
export function tone(ms: number): Uint8Array {
  const out = new Uint8Array(ms * 8);
  for (let i = 0; i < out.length; i++) out[i] = i % 2 ? 0x0f : 0x8f;
  return out;
}

/** A sine as 16-bit PCM at `rate` Hz. */
export function sine(hz: number, rate: number, ms: number, amplitude = 8000): Int16Array {
  const out = new Int16Array((rate * ms) / 1000);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

/** Loud μ-law 8 kHz (a 500 Hz sine) that survives resampling, unlike {@link tone}'s 4 kHz square wave. */
export function sineTone(ms: number): Uint8Array {
  return mulawEncode(sine(500, 8000, ms));
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Differences between consecutive times. */
export function gaps(times: number[]): number[] {
  return times.slice(1).map((t, i) => t - times[i]!);
}

export interface EndpointHarness<L> {
  /** `ws://127.0.0.1:<port>` of the server. */
  base: string;
  streams: MediaStreamEndpoint;
  pacer: OutboundPacer;
  /** The next leg handed to onCall. */
  nextLeg(): Promise<L>;
  close(): Promise<void>;
}

/** A plain HTTP server with the endpoint `attach` puts on it; legs are queued for the test. */
export async function endpointHarness<L>(attach: (server: Server, pacer: OutboundPacer, onCall: (leg: L) => void) => MediaStreamEndpoint): Promise<EndpointHarness<L>> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pacer = new OutboundPacer();
  const legs: L[] = [];
  const waiting: ((leg: L) => void)[] = [];
  const streams = attach(server, pacer, (leg) => {
    const w = waiting.shift();
    if (w) w(leg);
    else legs.push(leg);
  });
  return {
    base,
    streams,
    pacer,
    nextLeg: () => {
      const leg = legs.shift();
      return leg !== undefined ? Promise.resolve(leg) : new Promise((resolve) => waiting.push(resolve));
    },
    close: async () => {
      await streams.close();
      pacer.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A raw WebSocket client, for what the simulators refuse to do (bad messages, wrong formats). */
export async function rawClient(url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; closed: Promise<number>; closedWith: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(url, { headers });
  const closedWith = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const closed = closedWith.then((c) => c.code);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, closed, closedWith };
}
