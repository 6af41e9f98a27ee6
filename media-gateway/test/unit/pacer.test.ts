import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FRAME_BYTES, OutboundPacer } from '../../src/twilio/pacer.js';
import type { PacerSink } from '../../src/twilio/pacer.js';

type Sent = { kind: 'frame'; at: number; bytes: Uint8Array } | { kind: 'mark'; at: number; name: string };

/** Fake timers drive the pacer's setTimeout; `skewMs` makes the clock jump as if the event loop had been blocked. */
let skewMs = 0;
const clock = (): number => Date.now() + skewMs;

function recordingSink(): { sink: PacerSink; sent: Sent[] } {
  const sent: Sent[] = [];
  return {
    sent,
    sink: {
      sendFrame: (b, o) => sent.push({ kind: 'frame', at: clock(), bytes: Uint8Array.from(b.subarray(o, o + FRAME_BYTES)) }),
      sendMark: (name) => sent.push({ kind: 'mark', at: clock(), name }),
    },
  };
}

function audio(ms: number, value = 0x10): Uint8Array {
  return new Uint8Array(ms * 8).fill(value);
}

/** `n` frames, frame k filled with the value `from + k`: a duplicate or a gap shows. */
function numbered(from: number, n: number): Uint8Array {
  const a = new Uint8Array(n * FRAME_BYTES);
  for (let k = 0; k < n; k++) a.fill(from + k, k * FRAME_BYTES, (k + 1) * FRAME_BYTES);
  return a;
}

const frames = (sent: Sent[]): Extract<Sent, { kind: 'frame' }>[] => sent.filter((s): s is Extract<Sent, { kind: 'frame' }> => s.kind === 'frame');

beforeEach(() => {
  vi.useFakeTimers();
  skewMs = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('OutboundPacer', () => {
  it('sends a 3-frame burst at once, then one 20 ms frame per slot', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    const t0 = clock();
    stream.enqueueAudio(audio(1000));
    // The burst leaves at once, not at the next tick.
    expect(frames(sent)).toHaveLength(3);
    expect(stream.queuedMs).toBe(940);
    vi.advanceTimersByTime(20 * 10);
    expect(frames(sent)).toHaveLength(13);
    vi.advanceTimersByTime(2000);
    const f = frames(sent);
    expect(f).toHaveLength(50);
    expect(f.every((x) => x.bytes.byteLength === FRAME_BYTES)).toBe(true);
    // Frame k ≥ 3 leaves at t0 + (k − 2) × 20 ms: real time after the burst.
    expect(f.slice(3).map((x) => x.at - t0)).toEqual(Array.from({ length: 47 }, (_, i) => (i + 1) * 20));
    expect(stream.queuedMs).toBe(0);
    expect(stream.stats).toMatchObject({ framesSent: 50, lateFrames: 0, paddedFrames: 0 });
    pacer.stop();
  });

  it('hands each frame out as the queued chunk and an offset, without a view or copy per frame', () => {
    const pacer = new OutboundPacer({ now: clock });
    const got: { bytes: Buffer; offset: number }[] = [];
    const stream = pacer.register({ sendFrame: (bytes, offset) => got.push({ bytes, offset }), sendMark: () => {} });
    const memory = new Uint8Array(8 + 2 * FRAME_BYTES + 40).map((_, i) => i & 0xff);
    const chunk = memory.subarray(8, 8 + 2 * FRAME_BYTES); // a view, as AudioOutput queues slices
    const buffer = Buffer.from([1, 2, 3]).subarray(0, 0); // an empty chunk is ignored
    stream.enqueueAudio(buffer);
    stream.enqueueAudio(chunk);
    vi.advanceTimersByTime(100);
    expect(got.map((g) => g.offset)).toEqual([0, FRAME_BYTES]);
    // One Buffer over the chunk's own memory, the same object for both frames.
    expect(got[0]!.bytes).toBe(got[1]!.bytes);
    expect(got[0]!.bytes.buffer).toBe(memory.buffer);
    expect(got[0]!.bytes.byteOffset).toBe(8);
    expect([...got[1]!.bytes.subarray(FRAME_BYTES, 2 * FRAME_BYTES)]).toEqual([...chunk.subarray(FRAME_BYTES)]);
    pacer.stop();
  });

  it('paces every registered leg on the one timer, one frame per slot each', () => {
    const pacer = new OutboundPacer({ now: clock });
    const a = recordingSink();
    const b = recordingSink();
    pacer.register(a.sink).enqueueAudio(audio(200));
    vi.advanceTimersByTime(40);
    pacer.register(b.sink).enqueueAudio(audio(200));
    vi.advanceTimersByTime(100);
    // a: burst 3 at 0, then 20, 40, …, 140 → 10; b joined at 40: burst 3, then 60…140 → 8.
    expect(frames(a.sent)).toHaveLength(10);
    expect(frames(b.sent)).toHaveLength(8);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0); // idle: no wake-ups once every queue is empty
    pacer.stop();
  });

  it('keeps frames and marks in the order they were queued', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(audio(100, 0x11));
    stream.enqueueMark('first');
    stream.enqueueAudio(audio(60, 0x22));
    stream.enqueueMark('second');
    vi.advanceTimersByTime(1000);
    const order = sent.map((s) => (s.kind === 'mark' ? s.name : s.bytes[0]!.toString(16)));
    expect(order).toEqual(['11', '11', '11', '11', '11', 'first', '22', '22', '22', 'second']);
    // The mark goes out in the same slot as the last frame before it.
    const first = sent.findIndex((s) => s.kind === 'mark' && s.name === 'first');
    expect(sent[first]!.at).toBe(sent[first - 1]!.at);
    pacer.stop();
  });

  it('sends a mark at once when nothing is queued before it', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    pacer.register(sink).enqueueMark('now');
    expect(sent).toEqual([{ kind: 'mark', at: clock(), name: 'now' }]);
    pacer.stop();
  });

  it('pads a partial last frame with μ-law silence at once when a mark follows', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(new Uint8Array(200).fill(0x33));
    stream.enqueueMark('end');
    vi.advanceTimersByTime(0);
    const f = frames(sent);
    expect(f).toHaveLength(2);
    expect([...f[1]!.bytes.subarray(0, 40)].every((b) => b === 0x33)).toBe(true);
    expect([...f[1]!.bytes.subarray(40)].every((b) => b === 0xff)).toBe(true);
    expect(sent.at(-1)).toMatchObject({ kind: 'mark', name: 'end' });
    expect(stream.stats.paddedFrames).toBe(1);
    pacer.stop();
  });

  it('joins TTS chunks that are not frame-aligned, and pads a lone tail only after one slot without more audio', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(new Uint8Array(100).fill(0x44));
    vi.advanceTimersByTime(0);
    expect(frames(sent)).toHaveLength(0); // held: the rest of the frame may be on its way
    stream.enqueueAudio(new Uint8Array(100).fill(0x55));
    vi.advanceTimersByTime(0);
    const joined = frames(sent)[0]!.bytes;
    expect([joined[99], joined[100], joined[159]]).toEqual([0x44, 0x55, 0x55]);
    expect(frames(sent)).toHaveLength(1); // 40 bytes left over, held again
    vi.advanceTimersByTime(20);
    expect(frames(sent)).toHaveLength(2); // no more audio: padded so it does not stall
    expect(frames(sent)[1]!.bytes[40]).toBe(0xff);
    pacer.stop();
  });

  it('clear drops queued audio and the marks not yet sent, and returns their names', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(audio(60));
    stream.enqueueMark('a');
    stream.enqueueAudio(audio(500));
    stream.enqueueMark('b');
    stream.enqueueAudio(audio(500));
    stream.enqueueMark('c');
    vi.advanceTimersByTime(100);
    expect(sent.filter((s) => s.kind === 'mark').map((s) => (s as { name: string }).name)).toEqual(['a']);
    const before = sent.length;
    expect(stream.clear()).toEqual(['b', 'c']);
    expect(stream.queuedMs).toBe(0);
    vi.advanceTimersByTime(2000);
    expect(sent.length).toBe(before);
    // After a clear the carrier's buffer is empty: new audio starts with a fresh burst.
    stream.enqueueAudio(audio(200));
    vi.advanceTimersByTime(0);
    expect(sent.length).toBe(before + 3);
    pacer.stop();
  });

  it('pause rewinds to the first frame the far end had not started, holds marks not yet echoed, and resume sends on from there', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    const t0 = clock();
    stream.enqueueAudio(numbered(0, 5));
    stream.enqueueMark('100');
    stream.enqueueAudio(numbered(5, 5));
    stream.enqueueMark('200');
    stream.enqueueAudio(numbered(10, 1));
    stream.enqueueMark('220');
    stream.enqueueAudio(numbered(11, 39));
    stream.enqueueMark('1000');
    // Frame k plays over [k × 20, k × 20 + 20) from t0; at 210 ms frame 10 plays, frames 11 and
    // 12 were sent ahead (the burst lead) and Twilio's clear discards them.
    vi.advanceTimersByTime(210);
    const f = frames(sent);
    expect(f.map((x) => x.bytes[0])).toEqual(Array.from({ length: 13 }, (_, k) => k));
    const echoed = (name: string) => Number(name) <= clock() - t0;
    stream.pause((name) => !echoed(name));
    expect(stream.isPaused).toBe(true);
    // Frames 11 and 12 are back in the queue, ahead of 13…49 that were never sent.
    expect(stream.queuedMs).toBe((50 - 11) * 20);
    const before = sent.length;
    stream.enqueueAudio(numbered(50, 5)); // TTS audio keeps coming while paused
    stream.enqueueMark('late');
    vi.advanceTimersByTime(1000);
    expect(sent.length).toBe(before);
    stream.resume();
    vi.advanceTimersByTime(2000);
    const after = sent.slice(before);
    // The mark of frame 10 (still playing at the pause: not echoed) goes first, then frame 11: no duplicate, no gap.
    expect(after[0]).toMatchObject({ kind: 'mark', name: '220' });
    expect(frames(after).map((x) => x.bytes[0])).toEqual(Array.from({ length: 44 }, (_, k) => 11 + k));
    expect(after.filter((s) => s.kind === 'mark').map((s) => (s as { name: string }).name)).toEqual(['220', '1000', 'late']);
    // A fresh burst after the resume, and the pause is not a late frame.
    expect(frames(after).slice(0, 3).every((x) => x.at === frames(after)[0]!.at)).toBe(true);
    expect(stream.stats.lateFrames).toBe(0);
    expect(stream.queuedMs).toBe(0);
    pacer.stop();
  });

  it('hold (a carrier without clear) recalls nothing, and resume restores the lead the far end played out meanwhile', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(numbered(0, 10));
    stream.enqueueMark('m');
    stream.enqueueAudio(numbered(10, 40));
    vi.advanceTimersByTime(210); // frames 0…12 sent: 11 and 12 are the lead the carrier holds
    stream.hold();
    expect(stream.isPaused).toBe(true);
    // Nothing is put back: the carrier keeps and plays frames 11 and 12.
    expect(stream.queuedMs).toBe((50 - 13) * 20);
    const before = sent.length;
    vi.advanceTimersByTime(500);
    expect(sent.length).toBe(before);
    const resumedAt = clock();
    stream.resume();
    vi.advanceTimersByTime(1000);
    const after = frames(sent.slice(before));
    // Frame 13 on, each once; the lead played out during the hold, so a fresh burst at once.
    expect(after.map((x) => x.bytes[0])).toEqual(Array.from({ length: 37 }, (_, k) => 13 + k));
    expect(after.slice(0, 3).map((x) => x.at)).toEqual([resumedAt, resumedAt, resumedAt]);
    expect(after[3]!.at).toBe(resumedAt + 20);
    expect(stream.stats.lateFrames).toBe(0);
    pacer.stop();
  });

  it('a short hold resumes on the lead the far end still has, without a second burst on top', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(audio(1000));
    vi.advanceTimersByTime(100); // burst + 5: the far end is 60 ms ahead
    stream.hold();
    vi.advanceTimersByTime(20);
    const before = frames(sent).length;
    stream.resume(); // 40 ms of lead left: one frame tops it up to 60
    expect(frames(sent).length - before).toBe(1);
    vi.advanceTimersByTime(200);
    expect(frames(sent).length - before).toBe(11);
    pacer.stop();
  });

  it('clear during a pause drops the held audio and what queued behind it', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(audio(1000));
    vi.advanceTimersByTime(100);
    stream.pause(() => true);
    stream.enqueueAudio(audio(200));
    const before = sent.length;
    stream.clear();
    expect(stream.isPaused).toBe(false);
    expect(stream.queuedMs).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(sent.length).toBe(before);
    stream.resume(); // no-op: nothing held
    stream.enqueueAudio(audio(100));
    expect(frames(sent.slice(before))).toHaveLength(3);
    pacer.stop();
  });

  it('catches up at most 3 frames per leg after a late tick, and counts the late frame', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(audio(2000));
    vi.advanceTimersByTime(100); // burst + 5 frames
    expect(frames(sent)).toHaveLength(8);
    skewMs += 200; // the event loop was blocked for 200 ms before the next tick
    vi.advanceTimersByTime(20);
    expect(frames(sent)).toHaveLength(11); // 3 more, not the 11 slots that were missed
    vi.advanceTimersByTime(20);
    expect(frames(sent)).toHaveLength(12); // and back to one per slot: the debt is not repaid
    expect(stream.stats.lateFrames).toBe(1);
    expect(stream.stats.maxGapMs).toBe(220);
    expect(pacer.stats.lateTicks).toBe(1);
    pacer.stop();
  });

  it('repays a short delay so the far end stays one burst ahead of real time', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const t0 = clock();
    pacer.register(sink).enqueueAudio(audio(2000));
    vi.advanceTimersByTime(100);
    skewMs += 30; // the next tick is 30 ms late: the far end has 10 ms left to play
    vi.advanceTimersByTime(20);
    expect(frames(sent)).toHaveLength(11);
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(20);
      // Sent = elapsed slots + the 3-frame burst, give or take the half-frame tolerance.
      const expected = Math.floor((clock() - t0) / 20) + 3;
      expect(Math.abs(frames(sent).length - expected)).toBeLessThanOrEqual(1);
    }
    pacer.stop();
  });

  it('stops sending to a closed stream and forgets it', () => {
    const pacer = new OutboundPacer({ now: clock });
    const { sink, sent } = recordingSink();
    const stream = pacer.register(sink);
    stream.enqueueAudio(audio(1000));
    vi.advanceTimersByTime(40);
    const before = sent.length;
    stream.close();
    stream.enqueueAudio(audio(100));
    vi.advanceTimersByTime(200);
    expect(sent.length).toBe(before);
    expect(pacer.stats.streams).toBe(0);
    pacer.stop();
  });

  it('keeps serving other legs when one sink throws', () => {
    const errors: unknown[] = [];
    const pacer = new OutboundPacer({ now: clock, onSinkError: (e) => errors.push(e) });
    const good = recordingSink();
    pacer.register({ sendFrame: () => { throw new Error('socket gone'); }, sendMark: () => {} }).enqueueAudio(audio(100));
    pacer.register(good.sink).enqueueAudio(audio(100));
    vi.advanceTimersByTime(200);
    expect(frames(good.sent)).toHaveLength(5);
    expect(errors.length).toBe(5);
    pacer.stop();
  });
});

describe('OutboundPacer with phases', () => {
  /** Times of each stream's frames after its burst, relative to the pacer's first tick. */
  function steadyTimes(sent: Sent[], t0: number): number[] {
    return frames(sent)
      .slice(3)
      .map((f) => f.at - t0);
  }

  it('places each new stream in the phase with the fewest streams', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    const streams = Array.from({ length: 6 }, () => pacer.register(recordingSink().sink));
    expect(pacer.phaseSizes).toEqual([2, 2, 1, 1]);
    // Placed round the phases: 0, 1, 2, 3, 0, 1. Closing the first two frees one of phase 0 and one of phase 1.
    streams[0]!.close();
    streams[1]!.close();
    expect(pacer.phaseSizes).toEqual([1, 1, 1, 1]);
    pacer.register(recordingSink().sink);
    expect(pacer.phaseSizes).toEqual([2, 1, 1, 1]);
    expect(pacer.stats.streams).toBe(5);
    pacer.stop();
  });

  it('serves each phase on its own 20 ms grid, offset by 20 / phases ms, one frame per slot each', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    const sinks = Array.from({ length: 4 }, () => recordingSink());
    const streams = sinks.map((s) => pacer.register(s.sink));
    const t0 = clock();
    // All start together: each sends its burst at once, then on its phase's steps only.
    for (const s of streams) s.enqueueAudio(audio(1000));
    vi.advanceTimersByTime(1100);
    for (const [k, s] of sinks.entries()) {
      const times = steadyTimes(s.sent, t0);
      expect(times).toHaveLength(47);
      // Phase k's steps fall at 5k mod 20; its first is the first one after the burst's 20 ms.
      expect(times.every((t) => t % 20 === (5 * k) % 20), `phase ${k}: ${times.slice(0, 4).join(',')}`).toBe(true);
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      expect(new Set(gaps)).toEqual(new Set([20]));
      expect(streams[k]!.stats).toMatchObject({ framesSent: 50, lateFrames: 0 });
    }
    pacer.stop();
  });

  it('wakes only for steps whose phase has work, and not at all when idle', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    pacer.register(recordingSink().sink);
    const busy = pacer.register(recordingSink().sink); // phase 1
    busy.enqueueAudio(audio(400));
    vi.advanceTimersByTime(500);
    // A step every 20 ms for the one busy phase (plus the first tick at 0): not every 5 ms.
    expect(pacer.stats.ticks).toBeLessThanOrEqual(22);
    expect(pacer.stats.ticks).toBeGreaterThanOrEqual(18);
    expect(busy.stats).toMatchObject({ framesSent: 20, lateFrames: 0 });
    expect(vi.getTimerCount()).toBe(0);
    pacer.stop();
  });

  it('serves at once, in a late tick, every phase whose step it missed', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    const sinks = Array.from({ length: 4 }, () => recordingSink());
    const streams = sinks.map((s) => pacer.register(s.sink));
    for (const s of streams) s.enqueueAudio(audio(2000));
    vi.advanceTimersByTime(100);
    const before = sinks.map((s) => frames(s.sent).length);
    skewMs += 15; // the loop was blocked across three of the next steps
    vi.advanceTimersByTime(5);
    // That one tick served the steps it missed, each phase once: every stream sent a frame.
    const after = sinks.map((s) => frames(s.sent).length);
    expect(after.map((n, k) => n - before[k]!).filter((d) => d > 0).length).toBeGreaterThanOrEqual(3);
    vi.advanceTimersByTime(1000);
    for (const s of streams) expect(s.stats.lateFrames).toBe(0);
    pacer.stop();
  });

  it("paces a stream from its own phase's next step when another phase keeps the timer", () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    const a = recordingSink();
    const streams = [a, recordingSink(), recordingSink()].map((x) => pacer.register(x.sink));
    const d = recordingSink();
    const late = pacer.register(d.sink); // phase 3: steps at 15, 35, 55, … ms
    const t0 = clock();
    streams[0]!.enqueueAudio(audio(2000)); // phase 0 keeps the timer: its steps at 0, 20, 40, …
    vi.advanceTimersByTime(101);
    late.enqueueAudio(audio(400)); // burst now (101); room again from 111: the step at 115
    vi.advanceTimersByTime(60);
    const times = frames(d.sent).map((f) => f.at - t0);
    expect(times.slice(0, 6)).toEqual([101, 101, 101, 115, 135, 155]);
    expect(frames(a.sent).slice(3, 10).map((f) => f.at - t0)).toEqual([20, 40, 60, 80, 100, 120, 140]);
    pacer.stop();
  });

  it('starts an idle timer on the waking stream\'s phase', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    pacer.register(recordingSink().sink);
    const b = recordingSink();
    const stream = pacer.register(b.sink); // phase 1
    const t0 = clock();
    stream.enqueueAudio(audio(200));
    vi.advanceTimersByTime(300);
    // Its grid starts where it woke the timer: frames every 20 ms after the burst.
    expect(frames(b.sent).map((f) => f.at - t0)).toEqual([0, 0, 0, 20, 40, 60, 80, 100, 120, 140]);
    pacer.stop();
  });

  it('serviceIfDue runs a step already due from outside its timer, once, and nothing before it is due', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    const a = recordingSink();
    const stream = pacer.register(a.sink); // phase 0: steps at 0, 20, 40, … ms
    const t0 = clock();
    stream.enqueueAudio(audio(2000));
    vi.advanceTimersByTime(40);
    expect(frames(a.sent).map((f) => f.at - t0)).toEqual([0, 0, 0, 20, 40]);
    // Not due yet (the step at 60 ms): nothing goes out.
    skewMs += 20.5;
    pacer.serviceIfDue();
    expect(frames(a.sent)).toHaveLength(5);
    // The loop is busy past the step at 60 ms and its timer has not fired: the step is served now.
    skewMs += 1;
    pacer.serviceIfDue();
    expect(frames(a.sent)).toHaveLength(6);
    expect(frames(a.sent)[5]!.at - t0).toBe(61.5);
    pacer.serviceIfDue(); // the next step (80 ms) is not due: nothing more
    // The timer it replaced does not send that step's frame a second time; the grid goes on:
    // one frame, at the step at 80 ms (a fake timer fires in whole ms, the clock is 0.5 ms off them).
    vi.advanceTimersByTime(20);
    const next = frames(a.sent).slice(6).map((f) => f.at - t0);
    expect(next).toHaveLength(1);
    expect(Math.abs(next[0]! - 80)).toBeLessThanOrEqual(1);
    expect(stream.stats.lateFrames).toBe(0);
    pacer.stop();
  });

  it('serviceIfDue does nothing while the pacer is idle', () => {
    const pacer = new OutboundPacer({ now: clock, phases: 4 });
    const a = recordingSink();
    pacer.register(a.sink);
    skewMs += 100;
    pacer.serviceIfDue();
    expect(a.sent).toEqual([]);
    expect(pacer.stats.ticks).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    pacer.stop();
  });

  it('refuses a phase count that is not a positive integer', () => {
    for (const phases of [0, -1, 1.5, Number.NaN]) expect(() => new OutboundPacer({ phases }), String(phases)).toThrow(/phases/);
  });
});
