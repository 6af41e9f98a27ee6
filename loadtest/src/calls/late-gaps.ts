/**
 * Where a late frame at the callers became late. A caller stamps each agent frame when its
 * event loop reads it, so a gap over 40 ms says only that the frame was read late: the
 * server may have written it late, or the caller process may have been held (its loop busy,
 * a GC, no core for it). What else the same caller process read during the gap tells them
 * apart. A caller process runs a hundred calls, a third of them receiving 50 frames a second
 * each, so one that reads nothing for 20 ms was not reading; one that read other calls'
 * frames meanwhile was. Pure: the caller processes record, the parent classifies.
 */
import { LATE_GAP_MS } from './frame-gaps.js';

/** An interval of epoch ms, `from` inclusive, `to` exclusive. */
export interface Span {
  from: number;
  to: number;
}

/**
 * A silence this long inside a late gap is enough to make it late on its own (a gap is
 * late when it exceeds {@link LATE_GAP_MS}, 20 ms over the frame spacing), ms.
 */
export const CALLER_SILENCE_MS = LATE_GAP_MS - 20;

/** Where late frames at the callers became late: the three counts sum to the late frames. */
export interface LateFramesWhere {
  /** The caller process read other calls' frames during the gap (it was reading): the frame was late before it reached the caller. */
  othersArrived: number;
  /** The caller process read nothing for {@link CALLER_SILENCE_MS} or more during the gap while another caller process read frames: that process was held. */
  thisCallerSilent: number;
  /** Every caller process read nothing for {@link CALLER_SILENCE_MS} or more at the same time: the server paused every stream, or the machine every caller (with one caller process, this is every silent gap). */
  allCallersSilent: number;
}

const INITIAL_MS = 64 * 1024;

/**
 * Which milliseconds (since `originMs`) a caller process read at least one agent frame in:
 * one byte per ms, grown as needed (a 70 s run is 70 KB). Arrivals before the origin are
 * ignored.
 */
export class ArrivalMap {
  private bytes: Uint8Array;
  private last = -1;

  constructor(
    readonly originMs: number,
    bytes?: Uint8Array,
  ) {
    this.bytes = bytes ?? new Uint8Array(INITIAL_MS);
    if (bytes) this.last = bytes.lastIndexOf(1);
  }

  /** A frame read at epoch ms `at`. */
  mark(at: number): void {
    const i = Math.floor(at - this.originMs);
    if (i < 0 || !Number.isFinite(i)) return;
    if (i >= this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, i + 1));
      grown.set(this.bytes);
      this.bytes = grown;
    }
    this.bytes[i] = 1;
    if (i > this.last) this.last = i;
  }

  /** The marked milliseconds up to the last one, for sending to another process (with {@link originMs}). */
  snapshot(): Uint8Array {
    return this.bytes.slice(0, this.last + 1);
  }

  /**
   * The longest run of whole milliseconds strictly between the ms of `from` and the ms of
   * `to` in which no frame was read, as epoch ms; null when every one of them had a frame.
   */
  longestSilence(from: number, to: number): Span | null {
    const first = Math.max(0, Math.floor(from - this.originMs) + 1);
    const end = Math.floor(to - this.originMs);
    let best: [number, number] | null = null;
    let runStart = -1;
    for (let i = first; i <= end; i++) {
      const read = i === end || (i < this.bytes.length && this.bytes[i] === 1);
      if (!read && runStart < 0) runStart = i;
      if (read && runStart >= 0) {
        if (!best || i - runStart > best[1] - best[0]) best = [runStart, i];
        runStart = -1;
      }
    }
    return best ? { from: this.originMs + best[0], to: this.originMs + best[1] } : null;
  }
}

/**
 * The late gaps (over {@link LATE_GAP_MS}) between consecutive frame arrivals of one call
 * that lie inside an utterance (a gap over `breakMs` is a pause between utterances): the same
 * gaps `lateGaps(utteranceGaps(arrivals, breakMs))` counts, as intervals.
 */
export function lateGapSpans(arrivals: ArrayLike<number>, breakMs: number): Span[] {
  const spans: Span[] = [];
  for (let i = 1; i < arrivals.length; i++) {
    const gap = arrivals[i]! - arrivals[i - 1]!;
    if (gap > LATE_GAP_MS && gap <= breakMs) spans.push({ from: arrivals[i - 1]!, to: arrivals[i]! });
  }
  return spans;
}

/** What one caller process recorded over a run: its late gaps and when it read frames. */
export interface CallerArrivals {
  lateGaps: Span[];
  arrivals: ArrivalMap;
}

function silentFor(map: ArrivalMap, span: Span, ms: number): boolean {
  const s = map.longestSilence(span.from, span.to);
  return s !== null && s.to - s.from >= ms;
}

/**
 * Sorts each caller process's late gaps into {@link LateFramesWhere}: by the longest time
 * inside the gap in which its process read no frame, and, when that is at least
 * `silenceMs`, whether every other caller process also went `silenceMs` without a frame
 * inside that silence.
 */
export function classifyLateGaps(processes: readonly CallerArrivals[], silenceMs = CALLER_SILENCE_MS): LateFramesWhere {
  const where: LateFramesWhere = { othersArrived: 0, thisCallerSilent: 0, allCallersSilent: 0 };
  processes.forEach((p, i) => {
    for (const gap of p.lateGaps) {
      const silence = p.arrivals.longestSilence(gap.from, gap.to);
      if (!silence || silence.to - silence.from < silenceMs) where.othersArrived++;
      // `longestSilence` looks strictly between the milliseconds of its ends: from - 1 makes the silence's first ms count.
      else if (processes.every((q, j) => j === i || silentFor(q.arrivals, { from: silence.from - 1, to: silence.to }, silenceMs))) where.allCallersSilent++;
      else where.thisCallerSilent++;
    }
  });
  return where;
}

/**
 * How many late frames at the callers a held caller process read late (the generator's, not
 * the gateway's), with the clause that follows the count: "3 read late by a held caller
 * process". Null when there is no breakdown (reports from before it) or none was. The frames
 * every caller process read late at once are not counted: a pause of the server would look the
 * same. A single run's target line and the sweep's misses both say it through this.
 */
export function heldCallerLate(where: LateFramesWhere | null | undefined): { count: number; text: string } | null {
  const count = where?.thisCallerSilent ?? 0;
  return count > 0 ? { count, text: 'read late by a held caller process' } : null;
}

/** Column headings of the table of {@link LateFramesWhere} (terminal and HTML report). */
export const LATE_WHERE_HEADERS = [
  'late frames at the callers',
  'all',
  'its caller process read other calls’ frames meanwhile',
  `its caller process read none for >= ${CALLER_SILENCE_MS} ms, another did`,
  `every caller process read none for >= ${CALLER_SILENCE_MS} ms`,
];

/** The rows of that table, one per run that was sorted (none for reports from before). */
export function lateWhereRows(runs: readonly { target: string; framePacing: { lateFramesAtCallers: number; lateAtCallersWhere?: LateFramesWhere } }[]): string[][] {
  return runs.flatMap(({ target, framePacing: p }) => {
    const w = p.lateAtCallersWhere;
    return w ? [[target, String(p.lateFramesAtCallers), String(w.othersArrived), String(w.thisCallerSilent), String(w.allCallersSilent)]] : [];
  });
}

/** What the table's columns mean, for the reader. */
export const LATE_WHERE_NOTE =
  'A caller stamps a frame when its event loop reads it. A caller process that read other calls’ frames during a late gap was reading: the frame was late before it reached the caller (the server wrote it late, or it was held on its way). ' +
  `One that read no frame for ${CALLER_SILENCE_MS} ms or more while another caller process did was held itself (its loop busy, a GC, no core for it): the lateness is the generator's. ` +
  'When every caller process read nothing at once, the server paused every stream or the machine paused every caller; with one caller process the last two cannot be told apart.';
