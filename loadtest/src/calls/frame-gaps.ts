/**
 * Pure helpers of the caller processes: outbound pacing as a caller hears it, the overlap
 * of calls, and caller speech without its padding.
 */
import { mulawDecode } from '@vap/voice-pipeline';
import { fixed } from '../report.js';

/** Nominal spacing of 20 ms μ-law frames, ms. */
export const FRAME_MS = 20;
/** A frame later than this after the previous one is late (the definition), ms. */
export const LATE_GAP_MS = 40;

/**
 * Gaps between consecutive frame arrivals (ascending times, ms) that lie inside one
 * utterance: a gap longer than `breakMs` is the pause between two utterances (the caller
 * was speaking, or a barge-in cleared the audio) and is left out.
 */
export function utteranceGaps(arrivals: ArrayLike<number>, breakMs: number): number[] {
  return steadyGaps(arrivals, breakMs, 0);
}

/**
 * Gaps at the start of each utterance that the gateway's pacer shapes by design: its first 3
 * frames leave at once (the carrier's jitter buffer, `initialBurstFrames`), giving 2 gaps of
 * ~0 ms, and the next frame waits for the pacer's 20 ms grid, a gap of 10–30 ms set by where
 * the utterance started between two slots. |gap − 20| of these is up to 20 ms in every
 * utterance, about 3 gaps in 60: they would be the pacing jitter's p95/p99 on their own.
 */
export const DESIGNED_LEAD_GAPS = 3;

/**
 * The steady-state gaps of {@link utteranceGaps}: each utterance's first `leadGaps` gaps
 * (the designed lead, {@link DESIGNED_LEAD_GAPS}) left out. Pacing jitter is measured on
 * these; late frames are counted on every gap.
 */
export function steadyGaps(arrivals: ArrayLike<number>, breakMs: number, leadGaps = DESIGNED_LEAD_GAPS): number[] {
  const gaps: number[] = [];
  let inUtterance = 0;
  for (let i = 1; i < arrivals.length; i++) {
    const gap = arrivals[i]! - arrivals[i - 1]!;
    if (gap > breakMs) inUtterance = 0;
    else if (++inUtterance > leadGaps) gaps.push(gap);
  }
  return gaps;
}

/** How many gaps are late (> {@link LATE_GAP_MS}). */
export function lateGaps(gaps: ArrayLike<number>): number {
  let n = 0;
  for (let i = 0; i < gaps.length; i++) if (gaps[i]! > LATE_GAP_MS) n++;
  return n;
}

/** |gap - 20 ms| of each gap. */
export function jitterOf(gaps: ArrayLike<number>): number[] {
  return Array.from(gaps, (g) => Math.abs(g - FRAME_MS));
}

/**
 * The most intervals open at once. An interval ending exactly when another starts does
 * not overlap it (a redial after a hang-up is not two calls).
 */
export function peakOverlap(intervals: readonly { from: number; to: number }[]): number {
  const events: [number, number][] = [];
  for (const { from, to } of intervals) {
    if (to <= from) continue;
    events.push([from, 1], [to, -1]);
  }
  // Ends before starts at the same instant.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let peak = 0;
  for (const [, d] of events) {
    open += d;
    if (open > peak) peak = open;
  }
  return peak;
}

const FRAME_BYTES = 160;
/** Mean absolute level (of 32 767) at or below which a frame is silence: the caller simulator's audibility level (media-gateway caller-playback.ts). */
const AUDIBLE_MEAN_LEVEL = 64;

function silentFrame(mulaw: Uint8Array): boolean {
  const pcm = mulawDecode(mulaw);
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += Math.abs(pcm[i]!);
  return pcm.length === 0 || sum / pcm.length <= AUDIBLE_MEAN_LEVEL;
}

/**
 * The clip without its leading and trailing silent 20 ms frames, as the sandbox call
 * trims its lines: espeak-ng ends every clip with ~320 ms of silence, and left in, "end of
 * caller speech" would be stamped that much late and every turn would read that much
 * faster than it is. A clip that is all silence is returned whole.
 */
export function speechOnly(mulaw: Uint8Array): Uint8Array {
  const frames = Math.ceil(mulaw.byteLength / FRAME_BYTES);
  const silent = (i: number) => silentFrame(mulaw.subarray(i * FRAME_BYTES, (i + 1) * FRAME_BYTES));
  let first = 0;
  while (first < frames && silent(first)) first++;
  let last = frames - 1;
  while (last >= first && silent(last)) last--;
  return last < first ? mulaw : mulaw.subarray(first * FRAME_BYTES, Math.min(mulaw.byteLength, (last + 1) * FRAME_BYTES));
}

/** "99.62 % of 120000" for the gateway pacer's own gaps within 20 ± 5 ms; "-" without them. */
export function withinShare(g: { count: number; within5Ms: number } | null | undefined): string {
  if (!g || g.count <= 0) return '-';
  return `${fixed((g.within5Ms / g.count) * 100, 2)} % of ${g.count}`;
}

/**
 * Late frames per 10,000 frames received, so that runs with different frame counts compare:
 * the relay echoes every caller frame, about three times the frames of a gateway run with
 * the same callers, so its count alone overstates its floor. Null without frames.
 */
export function latePer10k(late: number, frames: number): number | null {
  return frames > 0 ? (late / frames) * 10_000 : null;
}

/** {@link latePer10k} as text: `9.35 per 10k`, or `-`. */
export function latePer10kText(late: number, frames: number): string {
  const rate = latePer10k(late, frames);
  return rate === null ? '-' : `${fixed(rate, 2)} per 10k`;
}
