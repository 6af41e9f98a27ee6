import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PacedCallLeg } from '../../src/paced-call-leg.js';
import { mediaStreamClosed } from '../../src/paced-call-leg.js';
import type { MulawCallerSimulator } from '../../src/simulators/mulaw-caller.js';
import { mulawDecode } from '@vap/voice-pipeline';
import { gaps, median, tone as squareTone } from '../stream-test-kit.js';

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
  /**
   * How the carrier differs from a μ-law one with carrier marks (Twilio, Telnyx; the
   * defaults). Vonage transcodes (L16 16 kHz, 640-byte frames) and has no mark or clear
   * messages: the leg plays marks by its own playout model and a clear recalls nothing sent.
   */
  carrier?: {
    /** Loud μ-law audio of `ms` the carrier carries (a transcoding carrier's resampler filters the kit's 4 kHz square wave out). */
    tone: (ms: number) => Uint8Array;
    /** Bytes on the wire of one 20 ms agent frame. */
    frameBytes: number;
    /** Caller audio arrives resampled, not byte for byte. */
    transcodes: true;
    /** No carrier marks or clear. */
    localMarks: true;
  };
}

/** Mean absolute level of a 20 ms μ-law frame above which it counts as speech, not silence. */
const LOUD_FRAME_LEVEL = 1000;

/**
 * What every carrier media stream (Twilio, Telnyx, Vonage) must do for the session, run against
 * the carrier's real endpoint and its simulator over a real socket: caller audio at the 20 ms
 * cadence, paced agent audio, marks, clear, pause/resume, DTMF and the three ways a leg ends.
 * The few assertions about what the carrier itself does with marks and clear (echoes, its
 * `clear` message) hold only where it has them; see {@link LegContractWorld.carrier}.
 */
export function mediaStreamLegContract(carrier: string, start: () => Promise<LegContractWorld>): void {
  describe(`${carrier} media stream leg (contract)`, () => {
    let world: LegContractWorld;
    let sims: MulawCallerSimulator[] = [];
    let tone = squareTone;
    let localMarks = false;
    beforeEach(async () => {
      world = await start();
      tone = world.carrier?.tone ?? squareTone;
      localMarks = world.carrier?.localMarks ?? false;
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
      if (world.carrier?.transcodes) {
        // Resampled on the way (8 → 16 → 8 kHz): the speech arrives as 200 ms of loud frames, not byte for byte.
        const levels = arrivals.map((_, k) => mulawDecode(Uint8Array.from(bytes.slice(k * 160, (k + 1) * 160))).reduce((sum, v) => sum + Math.abs(v), 0) / 160);
        expect(levels.filter((l) => l > LOUD_FRAME_LEVEL).length).toBeGreaterThanOrEqual(9);
        expect(levels.filter((l) => l > LOUD_FRAME_LEVEL).length).toBeLessThanOrEqual(11);
      } else {
        // The speech arrives whole and in order, between silence.
        const start = bytes.indexOf(0x8f);
        expect(bytes.slice(start, start + speech.length)).toEqual([...speech]);
      }
    });

    it('paces 1 s of agent audio to the caller as 50 frames at real time after a 3-frame burst', async () => {
      const { sim, leg } = await dial();
      const t0 = performance.now();
      leg.sendAudio(tone(1000));
      await vi.waitFor(() => expect(sim.receivedMedia.length).toBe(50), { timeout: 3000, interval: 20 });
      const at = sim.receivedMedia.map((m) => m.at);
      expect(sim.receivedMedia.every((m) => m.bytes === (world.carrier?.frameBytes ?? 160))).toBe(true);
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
      expect(played[0]!.at - t0).toBeLessThan(300 + 100);
      // Only a carrier with marks echoes them; without, the leg's own playout model reported it.
      expect(sim.marksEchoed).toMatchObject(localMarks ? [] : [{ name: 'utt-1', cut: false }]);
      // The leg's own playout model (no carrier marks) runs beside the caller's, up to a frame apart: it may report a frame early.
      if (localMarks) await vi.waitFor(() => expect(sim.heardAgentAudioMs).toBeCloseTo(300, 0), { timeout: 60, interval: 5 });
      expect(sim.heardAgentAudioMs).toBeCloseTo(300, 0);
    });

    it('clear empties the queue, fires onCleared where the carrier has a clear, and never reports the marks it cut', async () => {
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
      if (localMarks) {
        // No carrier clear: nothing is recalled (only the burst had left), so onCleared never fires.
        expect(cleared).toEqual([]);
        expect(leg.pacingStats.framesSent).toBeLessThanOrEqual(3);
      } else {
        await simCleared;
        expect(cleared).toHaveLength(1);
        expect(sim.playbackQueuedMs).toBe(0);
        expect(sim.marksEchoed).toMatchObject([{ name: 'sent-then-cut', cut: true }]);
      }
      expect(leg.queuedMs).toBe(0);
      // A mark after the clear comes straight back; by then the cut echo has been read too.
      leg.sendMark('after-clear');
      await vi.waitFor(() => expect(played).toEqual(['after-clear']), { timeout: 2000, interval: 10 });
      const received = sim.receivedMedia.length;
      await new Promise((r) => setTimeout(r, 100));
      expect(sim.receivedMedia.length).toBe(received);
      expect(played).toEqual(['after-clear']);
      expect(sim.clears).toHaveLength(localMarks ? 0 : 1);
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

    it('says the agent is playing from its first queued audio until the mark after it is played, and not while paused or after a clear', async () => {
      const { leg } = await dial();
      const played: string[] = [];
      leg.onMarkPlayed((name) => played.push(name));
      expect(leg.agentPlaying).toBe(false);
      leg.sendAudio(tone(200));
      leg.sendMark('a');
      expect(leg.agentPlaying).toBe(true);
      // Every frame has left (the queue is empty) while the carrier still plays them: the mark is out.
      await vi.waitFor(() => expect(leg.queuedMs).toBe(0), { timeout: 1000, interval: 5 });
      expect(played).toEqual([]);
      expect(leg.agentPlaying).toBe(true);
      await vi.waitFor(() => expect(played).toEqual(['a']), { timeout: 2000, interval: 5 });
      expect(leg.agentPlaying).toBe(false);
      leg.sendAudio(tone(400));
      leg.sendMark('b');
      await new Promise((r) => setTimeout(r, 100));
      leg.pause();
      expect(leg.agentPlaying).toBe(false);
      leg.resume();
      expect(leg.agentPlaying).toBe(true);
      leg.clear();
      expect(leg.agentPlaying).toBe(false);
    });

    it('pause holds the unplayed audio (clearing the carrier where it can); resume plays it and then reports the mark', async () => {
      const { sim, leg } = await dial();
      const played: string[] = [];
      leg.onMarkPlayed((name) => played.push(name));
      leg.sendAudio(tone(400));
      leg.sendMark('end');
      await new Promise((r) => setTimeout(r, 120));
      leg.pause();
      // Without a carrier clear, the ≤ 60 ms the carrier already had plays out; with one, it is dropped.
      if (localMarks) await vi.waitFor(() => expect(sim.playbackQueuedMs).toBe(0), { timeout: 1000, interval: 10 });
      else await vi.waitFor(() => expect(sim.clears).toHaveLength(1), { timeout: 1000, interval: 10 });
      expect(played).toEqual([]);
      const heardAtPause = sim.heardAgentAudioMs;
      expect(leg.queuedMs).toBeGreaterThan(200);
      await new Promise((r) => setTimeout(r, 150));
      expect(sim.heardAgentAudioMs).toBe(heardAtPause);
      const resumedAt = performance.now();
      leg.resume();
      await vi.waitFor(() => expect(played).toEqual(['end']), { timeout: 2000, interval: 10 });
      // The carrier's buffer ran dry during the pause (cleared, or played out): the resume
      // restores the pacer's 3-frame lead at once, not one frame a slot with no cushion.
      const resumed = sim.receivedMedia.filter((m) => m.at >= resumedAt);
      expect(resumed.length).toBeGreaterThanOrEqual(3);
      expect(resumed[2]!.at - resumedAt).toBeLessThan(30);
      // The held audio played after the pause: about the 400 ms sent in all, give or take the frame
      // the pacer's playout model counted as started when the clear went out (not sent again).
      expect(sim.heardAgentAudioMs).toBeGreaterThan(heardAtPause + 150);
      expect(sim.heardAgentAudioMs).toBeGreaterThanOrEqual(360);
      expect(sim.heardAgentAudioMs).toBeLessThanOrEqual(440);
      // Without a carrier clear, the frames it kept are not sent again: 400 ms is 20 frames, each sent once.
      if (localMarks) expect(sim.receivedMedia.length).toBe(20);
    });
  });
}
