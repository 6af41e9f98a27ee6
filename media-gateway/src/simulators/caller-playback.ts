/**
 * The caller's earpiece: Twilio's outbound playback queue as the simulator models it
 * (reference/telephony-twilio.md §2.2–2.3). Audio plays in arrival order at real time
 * (8 bytes per ms), marks are echoed once everything queued before them has played, and
 * `clear` stops playback at once and returns the pending marks. Times are ms on the
 * caller's monotonic clock; the owner calls {@link CallerPlayback.advance} every tick.
 */

import { mulawDecode } from '@vap/voice-pipeline';

/** A stretch of non-silent agent audio that played. */
export interface PlayedChunk {
  startedAt: number;
  endedAt: number;
  bytes: number;
}

/** Mean absolute level (of 32 767) above which a chunk counts as heard audio, not silence (≈ −54 dBFS). */
export const AUDIBLE_MEAN_LEVEL = 64;

/** True when μ-law audio is below {@link AUDIBLE_MEAN_LEVEL}. */
export function isSilentMulaw(bytes: Uint8Array): boolean {
  if (bytes.byteLength === 0) return true;
  const pcm = mulawDecode(bytes);
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += Math.abs(pcm[i]!);
  return sum / pcm.length <= AUDIBLE_MEAN_LEVEL;
}

type Item = { kind: 'audio'; bytes: number; silent: boolean } | { kind: 'mark'; name: string };

/** The playback queue of one simulated call; it has no timer of its own: the owner calls `advance`. */
export class CallerPlayback {
  readonly played: PlayedChunk[] = [];
  readonly clears: number[] = [];
  readonly marks: { name: string; at: number; cut: boolean }[] = [];
  heardMs = 0;
  private queue: Item[] = [];
  private queuedBytes = 0;
  /** When the head of the queue started (or starts) playing. */
  private headStartedAt = 0;

  constructor(private readonly hooks: { echoMark(name: string, cut: boolean): void }) {}

  get queuedMs(): number {
    return this.queuedBytes / 8;
  }

  enqueueAudio(bytes: Uint8Array, now: number): void {
    this.advance(now);
    // An idle line starts playing what arrives at once.
    if (this.queue.length === 0) this.headStartedAt = now;
    this.queue.push({ kind: 'audio', bytes: bytes.byteLength, silent: isSilentMulaw(bytes) });
    this.queuedBytes += bytes.byteLength;
  }

  /** A mark with nothing queued before it comes back immediately (§2.2). */
  enqueueMark(name: string, now: number): void {
    this.advance(now);
    if (this.queue.length === 0) this.echo(name, now, false);
    else this.queue.push({ kind: 'mark', name });
  }

  /** Play everything whose time has come. */
  advance(now: number): void {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (head.kind === 'mark') {
        this.queue.shift();
        this.echo(head.name, now, false);
        continue;
      }
      const endsAt = this.headStartedAt + head.bytes / 8;
      if (endsAt > now) return;
      this.record(head, this.headStartedAt, endsAt);
      this.queue.shift();
      this.queuedBytes -= head.bytes;
      this.headStartedAt = endsAt;
    }
  }

  /** Barge-in: stop now; the chunk being played counts up to now; pending marks return as cut. */
  clear(now: number): void {
    this.advance(now);
    const head = this.queue[0];
    if (head?.kind === 'audio' && now > this.headStartedAt) this.record({ bytes: Math.round((now - this.headStartedAt) * 8), silent: head.silent }, this.headStartedAt, now);
    for (const item of this.queue) if (item.kind === 'mark') this.echo(item.name, now, true);
    this.queue = [];
    this.queuedBytes = 0;
    this.clears.push(now);
  }

  private record(item: { bytes: number; silent: boolean }, startedAt: number, endedAt: number): void {
    if (item.silent) return;
    this.played.push({ startedAt, endedAt, bytes: item.bytes });
    // Bytes, not endedAt - startedAt: those are float clock readings whose difference drifts (399.9999… ms).
    this.heardMs += item.bytes / 8;
  }

  private echo(name: string, at: number, cut: boolean): void {
    this.marks.push({ name, at, cut });
    this.hooks.echoMark(name, cut);
  }
}
