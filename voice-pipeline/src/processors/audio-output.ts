import type { Frame, SayPurpose, SpokenWord } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';
import type { TtsAlignment } from '../providers/types.js';

/** What the output needs from the carrier leg (media-gateway's CallLeg satisfies it). */
export interface AudioTransport {
  sendAudio(mulaw: Uint8Array): void;
  sendMark(name: string): void;
  clear(): void;
  /**
   * Tentative barge-in: stop playing now (the carrier's buffer is cleared) and hold the audio
   * not yet played, including what the carrier discarded; later audio and marks queue behind
   * it. Marks of held audio are reported when it has played after {@link resume}.
   */
  pause(): void;
  /** Play the held audio on from where {@link pause} stopped it. */
  resume(): void;
  onMarkPlayed(listener: (name: string) => void): void;
}

/** A mark every this many ms of audio: the resolution of "what the caller heard". */
export const MARK_INTERVAL_MS = 100;
const BYTES_PER_MS = 8; // μ-law 8 kHz

interface Playback {
  turnId: string;
  purpose: SayPurpose | 'reply';
  text: string;
  /**
   * TTS alignments of the turn's audio as they came, each with the ms of audio sent before
   * it. Kept by reference and read once, when the turn is reported: copying each character
   * into growing arrays as chunks arrive made garbage that lived as long as the turn (#5).
   */
  alignments: { alignment: TtsAlignment; offsetMs: number }[];
  sentMs: number;
  playedMs: number;
  lastMarkMs: number;
  startedAt: number | null;
  ttsDone: boolean;
}

/**
 * The bottom of the pipeline: hands agent audio to the carrier leg, places a mark every
 * {@link MARK_INTERVAL_MS} and at the end of each turn, and learns from the echoed marks
 * how much the caller actually heard. When a turn has played to its end it reports
 * `agent.spoken` up; on `interrupt` it clears the carrier's queue and reports the turn
 * truncated to the words heard. `agent.pause` / `agent.resume` (a tentative barge-in) pause
 * and resume the carrier's playback; the turns stay open meanwhile. On `call.end` (the line closed with agent audio still
 * playing) it reports such turns truncated the same way, as interrupted.
 */
export class AudioOutput extends Processor {
  readonly name = 'AudioOutput';
  private readonly playbacks = new Map<string, Playback>();
  /** First agent audio handed to the carrier, per turn (session clock). */
  readonly firstAudioAt = new Map<string, number>();

  constructor(
    private readonly transport: AudioTransport,
    private readonly clock: () => number,
  ) {
    super();
    transport.onMarkPlayed((name) => this.onMark(name));
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'agent.turn-start':
        this.playbacks.set(frame.turnId, { turnId: frame.turnId, purpose: frame.purpose, text: '', alignments: [], sentMs: 0, playedMs: 0, lastMarkMs: 0, startedAt: null, ttsDone: false });
        return;
      case 'tts.sentence': {
        const p = this.playbacks.get(frame.turnId);
        if (p) p.text = p.text ? `${p.text} ${frame.text}` : frame.text;
        return;
      }
      case 'tts.audio':
        this.onAudio(frame.turnId, frame.mulaw, frame.alignment);
        return;
      case 'tts.done': {
        const p = this.playbacks.get(frame.turnId);
        if (!p) return;
        p.ttsDone = true;
        this.transport.sendMark(`${p.turnId}:end`);
        return;
      }
      case 'interrupt':
        this.interrupt(frame.at);
        this.push(frame, 'up');
        return;
      case 'agent.pause':
        this.transport.pause();
        this.push(frame, 'up');
        return;
      case 'agent.resume':
        this.transport.resume();
        this.push(frame, 'up');
        return;
      case 'call.end':
        this.lineClosed(frame.at);
        return;
      default:
        return;
    }
  }

  private onAudio(turnId: string, mulaw: Uint8Array, alignment: TtsAlignment | null): void {
    const p = this.playbacks.get(turnId);
    if (!p || mulaw.length === 0) return;
    if (p.startedAt === null) {
      p.startedAt = this.clock();
      this.firstAudioAt.set(turnId, p.startedAt);
      this.push({ kind: 'agent.audio-started', turnId, at: p.startedAt }, 'up');
    }
    if (alignment && alignment.chars.length > 0) p.alignments.push({ alignment, offsetMs: p.sentMs });
    // Marks go between slices of the chunk so playback is known to MARK_INTERVAL_MS.
    let offset = 0;
    while (offset < mulaw.length) {
      const untilMark = Math.max(1, (p.lastMarkMs + MARK_INTERVAL_MS - p.sentMs) * BYTES_PER_MS);
      const slice = mulaw.subarray(offset, offset + untilMark);
      this.transport.sendAudio(slice);
      offset += slice.length;
      p.sentMs += slice.length / BYTES_PER_MS;
      if (p.sentMs - p.lastMarkMs >= MARK_INTERVAL_MS) {
        p.lastMarkMs = p.sentMs;
        this.transport.sendMark(`${turnId}:${Math.round(p.sentMs)}`);
      }
    }
  }

  private onMark(name: string): void {
    const sep = name.lastIndexOf(':');
    const p = this.playbacks.get(name.slice(0, sep));
    if (!p) return;
    const pos = name.slice(sep + 1);
    if (pos !== 'end') {
      p.playedMs = Math.max(p.playedMs, Number(pos));
      return;
    }
    p.playedMs = p.sentMs;
    this.playbacks.delete(p.turnId);
    this.report(p, false);
  }

  private interrupt(at: number): void {
    const cut = [...this.playbacks.values()];
    this.playbacks.clear();
    this.transport.clear();
    for (const p of cut) {
      // Turns that never reached the caller's ear leave no message behind.
      if (p.startedAt === null) continue;
      this.report(p, true, at);
    }
  }

  /** The caller hung up (or we did) mid-turn: no end mark will come, keep what was heard. */
  private lineClosed(at: number): void {
    const cut = [...this.playbacks.values()];
    this.playbacks.clear();
    for (const p of cut) if (p.startedAt !== null) this.report(p, true, at);
  }

  private report(p: Playback, interrupted: boolean, at = this.clock()): void {
    // No audio ever reached the carrier (the TTS failed first): its end mark comes back at
    // once, but the caller heard nothing.
    const played = p.startedAt !== null;
    const timing = played ? charTiming(p) : null;
    const heardText = !timing ? '' : interrupted ? heardPrefix(p, timing, p.playedMs) : p.text;
    // Timings of exactly the heard words, so a record's text and words agree.
    const words = timing ? spokenWords(p, timing).slice(0, heardText.split(/\s+/).filter(Boolean).length) : [];
    this.push(
      {
        kind: 'agent.spoken',
        turnId: p.turnId,
        text: p.text,
        heardText,
        interrupted,
        playedMs: Math.round(p.playedMs),
        startedAt: p.startedAt ?? at,
        words,
        purpose: p.purpose,
        at,
      },
      'up',
    );
  }
}

/** Each character of the turn's alignments with its start (ms from the start of the turn's audio). */
interface CharTiming {
  chars: string[];
  startMs: number[];
}

function charTiming(p: Playback): CharTiming {
  const chars: string[] = [];
  const startMs: number[] = [];
  for (const { alignment, offsetMs } of p.alignments) {
    for (let i = 0; i < alignment.chars.length; i++) {
      chars.push(alignment.chars[i]!);
      startMs.push(offsetMs + (alignment.startMs[i] ?? 0));
    }
  }
  return { chars, startMs };
}

/** Words of the turn whose first character was played before `playedMs`. */
function heardPrefix(p: Playback, t: CharTiming, playedMs: number): string {
  if (t.chars.length > 0) {
    let n = 0;
    while (n < t.chars.length && t.startMs[n]! < playedMs) n++;
    // Pieces of a turn are synthesised one by one, each with the spaces it was sent with, so
    // their alignments may join with two spaces (or none at the start): runs collapse to one.
    return cutAtWord(collapseSpaces(t.chars.slice(0, n).join('')), collapseSpaces(t.chars.join('')));
  }
  // No alignment from the provider: estimate by the share of audio played.
  const share = p.sentMs > 0 ? Math.min(1, playedMs / p.sentMs) : 0;
  return cutAtWord(p.text.slice(0, Math.floor(p.text.length * share)), p.text);
}

function collapseSpaces(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/^ /, '');
}

/** `prefix` trimmed back to whole words of `full` (a half-heard word is not heard). */
function cutAtWord(prefix: string, full: string): string {
  if (prefix.length >= full.length) return full.trim();
  const next = full[prefix.length];
  if (next === undefined || /\s/.test(next)) return prefix.trim();
  const lastSpace = prefix.search(/\s\S*$/);
  return lastSpace >= 0 ? prefix.slice(0, lastSpace).trim() : '';
}

/** Every word of the turn with its playing time; the caller keeps the heard prefix. */
function spokenWords(p: Playback, timing: CharTiming): SpokenWord[] {
  const origin = p.startedAt ?? 0;
  const words: SpokenWord[] = [];
  if (timing.chars.length === 0) {
    // Spread words over the audio in proportion to their length.
    const parts = p.text.split(/\s+/).filter(Boolean);
    const total = parts.reduce((s, w) => s + w.length + 1, 0) || 1;
    let t = 0;
    for (const w of parts) {
      const d = (p.sentMs * (w.length + 1)) / total;
      words.push({ word: w, startAt: origin + t, endAt: origin + t + d });
      t += d;
    }
    return words;
  }
  let current = '';
  let start = 0;
  for (let i = 0; i <= timing.chars.length; i++) {
    const c = timing.chars[i];
    const t = timing.startMs[i] ?? p.sentMs;
    if (c === undefined || /\s/.test(c)) {
      if (current) {
        words.push({ word: current, startAt: origin + start, endAt: origin + Math.min(t, p.sentMs) });
        current = '';
      }
    } else {
      if (!current) start = t;
      current += c;
    }
  }
  return words;
}
