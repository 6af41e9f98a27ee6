import { describe, expect, it } from 'vitest';
import { lateGaps, utteranceGaps } from '../src/calls/frame-gaps.js';
import { ArrivalMap, CALLER_SILENCE_MS, classifyLateGaps, heldCallerLate, lateGapSpans, lateWhereRows } from '../src/calls/late-gaps.js';
import type { CallerArrivals, Span } from '../src/calls/late-gaps.js';

const T0 = 1_796_000_000_000.25;

/** A caller process that read a frame every `everyMs` from `from` to `to` (ms after T0), except inside `holes`. */
function process(everyMs: number, from: number, to: number, holes: [number, number][], lateGaps: Span[] = []): CallerArrivals {
  const arrivals = new ArrivalMap(T0);
  for (let t = from; t < to; t += everyMs) if (!holes.some(([a, b]) => t > a && t < b)) arrivals.mark(T0 + t);
  return { lateGaps, arrivals };
}

const gap = (from: number, to: number): Span => ({ from: T0 + from, to: T0 + to });

describe('arrival map', () => {
  it('finds the longest run of milliseconds without a frame strictly inside a gap', () => {
    const m = new ArrivalMap(T0);
    for (const t of [0, 1, 2, 10, 11, 40.7]) m.mark(T0 + t);
    // Between the ms of 2 and the ms of 40.7: 3-9 (7 ms) and 12-39 (28 ms) had no frame.
    expect(m.longestSilence(T0 + 2.3, T0 + 40.7)).toEqual({ from: T0 + 12, to: T0 + 40 });
    // Up to the ms of 11: only 3-9.
    expect(m.longestSilence(T0 + 2, T0 + 11)).toEqual({ from: T0 + 3, to: T0 + 10 });
    // Consecutive milliseconds leave nothing between them.
    expect(m.longestSilence(T0 + 0, T0 + 2)).toBeNull();
  });

  it('grows past its first size and ignores arrivals before its origin', () => {
    const m = new ArrivalMap(T0);
    m.mark(T0 - 5);
    m.mark(T0 + 200_000.9);
    m.mark(T0 + 200_100);
    const snap = m.snapshot();
    expect(snap.length).toBe(200_101);
    expect(snap.reduce((n, b) => n + b, 0)).toBe(2);
    // What another process rebuilds from the snapshot answers the same.
    const copy = new ArrivalMap(T0, snap);
    expect(copy.longestSilence(T0 + 200_000, T0 + 200_100)).toEqual({ from: T0 + 200_001, to: T0 + 200_100 });
    expect(copy.snapshot()).toEqual(snap);
  });
});

describe('late gap spans', () => {
  it('are the gaps lateGaps(utteranceGaps()) counts, as intervals', () => {
    const arrivals = [0, 20, 61, 81, 700, 741, 760, 1400, 1441.5];
    const spans = lateGapSpans(arrivals, 500);
    // 20 → 61 and 700 → 741 are late; 81 → 700 is a pause between utterances; 1400 → 1441.5 is late.
    expect(spans).toEqual([
      { from: 20, to: 61 },
      { from: 700, to: 741 },
      { from: 1400, to: 1441.5 },
    ]);
    expect(spans.length).toBe(lateGaps(utteranceGaps(arrivals, 500)));
    // Exactly 40 ms is on time.
    expect(lateGapSpans([0, 40], 500)).toEqual([]);
  });
});

describe('classify late gaps', () => {
  it('sorts each late gap by what its caller process and the others read meanwhile', () => {
    // Process A: a frame every 2 ms, but nothing from 1000 to 1030 (held 30 ms) and from 3000 to 3035.
    // Process B: reading throughout, except from 3002 to 3033.
    const a = process(2, 0, 5000, [
      [1000, 1030],
      [3000, 3035],
    ]);
    const b = process(2, 0, 5000, [[3002, 3033]]);
    a.lateGaps = [gap(1000, 1030), gap(3000, 3035), gap(2000, 2045)];
    b.lateGaps = [gap(4000, 4042)];
    expect(classifyLateGaps([a, b])).toEqual({
      // A's 2000 → 2045 and B's 4000 → 4042: each process went on reading frames (every 2 ms) during the gap.
      othersArrived: 2,
      // A's 1000 → 1030: A read nothing for 29 ms while B read on.
      thisCallerSilent: 1,
      // A's 3000 → 3035: B read nothing for 31 ms of A's 34 ms silence too (3003-3033).
      allCallersSilent: 1,
    });
  });

  it('needs a silence of CALLER_SILENCE_MS to call a caller process held', () => {
    const short = process(1, 0, 2000, [[1000, 1000 + CALLER_SILENCE_MS]], [gap(990, 1035)]);
    const long = process(1, 0, 2000, [[1000, 1001 + CALLER_SILENCE_MS]], [gap(990, 1035)]);
    const other = process(1, 0, 2000, []);
    // A frame every ms but for holes (1000, 1020) and (1000, 1021): 19 and 20 silent milliseconds, 1001-1019 and 1001-1020.
    expect(classifyLateGaps([short, other])).toEqual({ othersArrived: 1, thisCallerSilent: 0, allCallersSilent: 0 });
    expect(classifyLateGaps([long, other])).toEqual({ othersArrived: 0, thisCallerSilent: 1, allCallersSilent: 0 });
  });

  it('counts every silent gap of a lone caller process as all callers silent, and nothing without late gaps', () => {
    const alone = process(2, 0, 2000, [[1000, 1050]], [gap(998, 1050)]);
    expect(classifyLateGaps([alone])).toEqual({ othersArrived: 0, thisCallerSilent: 0, allCallersSilent: 1 });
    expect(classifyLateGaps([process(2, 0, 100, [])])).toEqual({ othersArrived: 0, thisCallerSilent: 0, allCallersSilent: 0 });
  });
});

describe('late-where rows', () => {
  it('one row per sorted run, none for a run from an older report', () => {
    const rows = lateWhereRows([
      { target: 'gateway', framePacing: { lateFramesAtCallers: 22, lateAtCallersWhere: { othersArrived: 1, thisCallerSilent: 21, allCallersSilent: 0 } } },
      { target: 'relay', framePacing: { lateFramesAtCallers: 185 } },
    ]);
    expect(rows).toEqual([['gateway', '22', '1', '21', '0']]);
  });
});

describe('held caller processes', () => {
  it('counts only the frames one caller process read late while another read, and nothing without a breakdown', () => {
    expect(heldCallerLate({ othersArrived: 3, thisCallerSilent: 5, allCallersSilent: 9 })).toEqual({ count: 5, text: 'read late by a held caller process' });
    // Every caller process silent at once could be the server's pause: not the generator's.
    expect(heldCallerLate({ othersArrived: 3, thisCallerSilent: 0, allCallersSilent: 9 })).toBeNull();
    expect(heldCallerLate(null)).toBeNull();
    expect(heldCallerLate(undefined)).toBeNull();
  });
});
