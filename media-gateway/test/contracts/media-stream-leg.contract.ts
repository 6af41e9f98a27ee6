import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PacedCallLeg } from '../../src/paced-call-leg.js';
import { mediaStreamClosed } from '../../src/paced-call-leg.js';
import type { MulawCallerSimulator } from '../../src/simulators/mulaw-caller.js';
import { gaps, median, tone } from '../stream-test-kit.js';

/** A call on a carrier's endpoint: the carrier's simulator on one end, the gateway's leg on the other. */
export interface DialledLeg {
  sim: MulawCallerSimulator;
  leg: PacedCallLeg;
}

/** One carrier's endpoint for the contract: dial a call on it, count its legs, close it. */
export interface LegContractWorld {
  dial(): Promise<DialledLeg>;
  activeLegs(): number;
  close(): Promise<void>;
}

/**
 * What every μ-law carrier media stream (Twilio, Telnyx) must do for the session, run against
 * the carrier's real endpoint and its simulator over a real socket: caller audio at the 20 ms
 * cadence, paced agent audio, marks, clear, pause/resume, DTMF and the three ways a leg ends.
 */
export function mediaStreamLegContract(carrier: string, start: () => Promise<LegContractWorld>): void {
  describe(`${carrier} media stream leg (contract)`, () => {
    let world: LegContractWorld;
    let sims: MulawCallerSimulator[] = [];
    beforeEach(async () => {
      world = await start();
    });
    afterEach(async () => {
      for (const s of sims) s.drop();
      sims = [];
      await world.close();
    });
    const dial = async (): Promise<DialledLeg> => {
      const d = await world.dial();
      sims.push(d.sim);
      return d;
    };

    it('delivers caller audio to onAudio at the 20 ms cadence, speech included', async () => {
      const { sim, leg } = await dial();
      const arrivals: number[] = [];
      const bytes: number[] = [];
      leg.onAudio((mulaw) => {
        arrivals.push(performance.now());
        bytes.push(...mulaw);
      });
      const speech = tone(200);
      const spoken = await sim.say(speech);
      await vi.waitFor(() => expect(arrivals.length).toBeGreaterThan(25), { timeout: 2000, interval: 20 });
      expect(bytes.length).toBe(arrivals.length * 160);
      expect(median(gaps(arrivals))).toBeGreaterThanOrEqual(15);
      expect(median(gaps(arrivals))).toBeLessThanOrEqual(25);
      expect(spoken.endedAt).toBeGreaterThan(spoken.startedAt);
      // The speech arrives whole and in order, between silence.
      const start = bytes.indexOf(0x8f);
      expect(bytes.slice(start, start + speech.length)).toEqual([...speech]);
    });

    it('paces 1 s of agent audio to the caller as 50 frames at real time after a 3-frame burst', async () => {
      const { sim, leg } = await dial();
      const t0 = performance.now();
      leg.sendAudio(tone(1000));
      await vi.waitFor(() => expect(sim.receivedMedia.length).toBe(50), { timeout: 3000, interval: 20 });
      const at = sim.receivedMedia.map((m) => m.at);
      expect(sim.receivedMedia.every((m) => m.bytes === 160)).toBe(true);
      expect(median(gaps(at.slice(3)))).toBeGreaterThanOrEqual(16);
      expect(median(gaps(at.slice(3)))).toBeLessThanOrEqual(24);
      // Never ahead of real time beyond the burst: frame k ≥ 3 leaves no earlier than
      // (k − 2) × 20 ms, less the pacer's half-frame jitter tolerance.
      for (let k = 3; k < 50; k++) expect(at[k]! - t0).toBeGreaterThanOrEqual((k - 2) * 20 - 10);
      expect(leg.pacingStats.framesSent).toBe(50);
      expect(leg.queuedMs).toBe(0);
      // The simulator checks each frame against the carrier's documented outbound shape.
      expect(sim.protocolErrors).toEqual([]);
    });

    it('reports a mark once the caller has played the audio before it', async () => {
      const { sim, leg } = await dial();
      const played: { name: string; at: number }[] = [];
      leg.onMarkPlayed((name) => played.push({ name, at: performance.now() }));
      const t0 = performance.now();
      leg.sendAudio(tone(300));
      leg.sendMark('utt-1');
      await vi.waitFor(() => expect(played.map((p) => p.name)).toEqual(['utt-1']), { timeout: 2000, interval: 10 });
      expect(played[0]!.at - t0).toBeGreaterThanOrEqual(300 - 5);
      expect(sim.marksEchoed).toMatchObject([{ name: 'utt-1', cut: false }]);
      expect(sim.heardAgentAudioMs).toBeCloseTo(300, 0);
    });

    it('clear empties the caller queue, fires onCleared and never reports the marks it cut', async () => {
      const { sim, leg } = await dial();
      const played: string[] = [];
      const cleared: number[] = [];
      leg.onMarkPlayed((name) => played.push(name));
      leg.onCleared((at) => cleared.push(at));
      leg.sendAudio(tone(60)); // the burst: all at the carrier at once
      leg.sendMark('sent-then-cut'); // so this mark is at the carrier too, behind 60 ms of audio
      leg.sendAudio(tone(1000));
      leg.sendMark('never-sent');
      const simCleared = new Promise<number>((resolve) => sim.once('clear', resolve));
      leg.clear();
      await simCleared;
      expect(cleared).toHaveLength(1);
      expect(sim.playbackQueuedMs).toBe(0);
      expect(leg.queuedMs).toBe(0);
      expect(sim.marksEchoed).toMatchObject([{ name: 'sent-then-cut', cut: true }]);
      // A mark after the clear comes straight back; by then the cut echo has been read too.
      leg.sendMark('after-clear');
      await vi.waitFor(() => expect(played).toEqual(['after-clear']), { timeout: 2000, interval: 10 });
      const received = sim.receivedMedia.length;
      await new Promise((r) => setTimeout(r, 100));
      expect(sim.receivedMedia.length).toBe(received);
      expect(sim.clears).toHaveLength(1);
    });

    it('passes key presses to onDtmf', async () => {
      const { sim, leg } = await dial();
      const digits: string[] = [];
      leg.onDtmf((d) => digits.push(d));
      sim.pressDigit('4');
      sim.pressDigit('#');
      await vi.waitFor(() => expect(digits).toEqual(['4', '#']), { timeout: 2000, interval: 10 });
    });

    it("ends with 'hangup' when the carrier sends stop, and counts the close", async () => {
      const { sim, leg } = await dial();
      const before = mediaStreamClosed.get('hangup');
      const ended = new Promise((resolve) => leg.onEnd(resolve));
      await sim.hangup();
      expect(await ended).toBe('hangup');
      expect(mediaStreamClosed.get('hangup')).toBe(before + 1);
      await vi.waitFor(() => expect(world.activeLegs()).toBe(0));
    });

    it("ends with 'socket-lost' when the connection drops without stop", async () => {
      const { sim, leg } = await dial();
      const ended = new Promise((resolve) => leg.onEnd(resolve));
      sim.drop();
      expect(await ended).toBe('socket-lost');
    });

    it("hangup() closes the caller's socket with 1000 and ends with 'local', once", async () => {
      const { sim, leg } = await dial();
      const reasons: string[] = [];
      leg.onEnd((r) => reasons.push(r));
      await leg.hangup();
      expect(await sim.closed).toBe(1000);
      await leg.hangup();
      expect(reasons).toEqual(['local']);
      // Registering after the end still learns how it ended.
      expect(await new Promise((resolve) => leg.onEnd(resolve))).toBe('local');
    });

    it('pause clears the carrier and holds the unplayed audio; resume plays it and then reports the mark', async () => {
      const { sim, leg } = await dial();
      const played: string[] = [];
      leg.onMarkPlayed((name) => played.push(name));
      leg.sendAudio(tone(400));
      leg.sendMark('end');
      await new Promise((r) => setTimeout(r, 120));
      leg.pause();
      await vi.waitFor(() => expect(sim.clears).toHaveLength(1), { timeout: 1000, interval: 10 });
      const heardAtPause = sim.heardAgentAudioMs;
      expect(leg.queuedMs).toBeGreaterThan(200);
      await new Promise((r) => setTimeout(r, 150));
      expect(sim.heardAgentAudioMs).toBe(heardAtPause);
      leg.resume();
      await vi.waitFor(() => expect(played).toEqual(['end']), { timeout: 2000, interval: 10 });
      // The held audio played after the pause: about the 400 ms sent in all, give or take the frame
      // the pacer's playout model counted as started when the clear went out (not sent again).
      expect(sim.heardAgentAudioMs).toBeGreaterThan(heardAtPause + 150);
      expect(sim.heardAgentAudioMs).toBeGreaterThanOrEqual(360);
      expect(sim.heardAgentAudioMs).toBeLessThanOrEqual(440);
    });
  });
}
