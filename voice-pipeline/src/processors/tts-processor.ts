import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';
import { rawFormatSpec } from '../audio/output-formats.js';
import { ProviderError } from '../providers/provider-error.js';
import type { TtsProvider, TtsStream, TtsStreamOptions } from '../providers/types.js';

export interface TtsProcessorOptions {
  provider: TtsProvider;
  /** Must produce what the carrier plays: `ulaw_8000` for phone legs. */
  stream: TtsStreamOptions;
  clock: () => number;
  /**
   * How far ahead of playback a turn's text goes to the provider, ms of audio (default
   * {@link TTS_LOOKAHEAD_MS}); 0 sends every sentence as it comes. See {@link TtsProcessor}.
   */
  lookaheadMs?: number;
}

/**
 * A turn's next sentence goes to the provider once the audio it has given for the turn is less
 * than this far ahead of playback: far above a provider's first-byte time (ElevenLabs ~0.1–0.5 s),
 * so sentences still follow each other without a gap, yet the rest of a long answer the caller
 * cuts off is never synthesised (nor billed per character).
 */
export const TTS_LOOKAHEAD_MS = 3000;

interface TurnSynthesis {
  id: string;
  controller: AbortController;
  sentences: string[];
  /** How many of `sentences` were let go: counted, passed on, and to be written to the stream. */
  released: number;
  /** How many of them the current stream was given. */
  written: number;
  ended: boolean;
  /** `end()` went to the stream: every sentence had been sent and the LLM was done. */
  endSent: boolean;
  finished: boolean;
  retried: boolean;
  /** When the provider's first audio for the turn came (session clock; null: none yet). */
  firstAudioAt: number | null;
  /** Ms of audio in `held`: it plays after everything passed on before it. */
  heldAudioMs: number;
  /** Wakes {@link TtsProcessor.feed} when playback has caught up on held sentences. */
  wake: ReturnType<typeof setTimeout> | null;
  stream: TtsStream | null;
  /** Frames held back while an earlier turn is still speaking. */
  held: Frame[];
}

/**
 * Speaks each agent turn through one TTS stream, opened as the turn starts (hiding the
 * connection time behind the LLM's first token). Sentences are flushed one by one so
 * audio starts after the first. Once audio plays, the next sentence waits until the turn's
 * audio is less than `lookaheadMs` ahead of playback: the part of a long answer that a barge-in
 * cuts off is mostly never synthesised, received or counted. Playback is reckoned at real time
 * from the audio passed on (a pause only makes a sentence go sooner). Turns play in the order
 * they started: audio of a later turn waits until the earlier one is done, and its own
 * lookahead counts the earlier turns' audio still to play before its own. `interrupt` aborts
 * every stream at once.
 * A stream that fails before any audio is reopened once with the same text.
 */
export class TtsProcessor extends Processor {
  readonly name = 'TtsProcessor';
  private readonly turns = new Map<string, TurnSynthesis>();
  private readonly order: string[] = [];
  /** First sentence sent → first audio byte, per turn. */
  readonly firstByteMs = new Map<string, number>();
  private readonly firstSentenceAt = new Map<string, number>();
  private readonly lookaheadMs: number;
  /** Bytes per ms of the output format (every `TtsOutputFormat` is raw audio at a fixed rate). */
  private readonly bytesPerMs: number;
  /**
   * When the audio passed on so far will have played (session clock), reckoning each chunk to
   * start when it is passed on or when the one before it ends, whichever is later.
   */
  private playoutEndsAt = 0;

  constructor(private readonly opts: TtsProcessorOptions) {
    super();
    this.lookaheadMs = opts.lookaheadMs ?? TTS_LOOKAHEAD_MS;
    const format = rawFormatSpec(opts.stream.outputFormat);
    this.bytesPerMs = (format.sampleRateHz * format.bytesPerSample) / 1000;
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'agent.turn-start': {
        const turn: TurnSynthesis = {
          id: frame.turnId,
          controller: new AbortController(),
          sentences: [],
          released: 0,
          written: 0,
          ended: false,
          endSent: false,
          finished: false,
          retried: false,
          firstAudioAt: null,
          heldAudioMs: 0,
          wake: null,
          stream: null,
          held: [],
        };
        this.turns.set(turn.id, turn);
        this.order.push(turn.id);
        this.emit(turn, frame);
        void this.run(turn);
        return;
      }
      case 'tts.sentence': {
        const turn = this.turns.get(frame.turnId);
        if (!turn) return;
        turn.sentences.push(frame.text);
        if (!this.firstSentenceAt.has(turn.id)) this.firstSentenceAt.set(turn.id, this.opts.clock());
        this.feed(turn);
        return;
      }
      case 'llm.done': {
        const turn = this.turns.get(frame.turnId);
        if (!turn) return;
        turn.ended = true;
        this.feed(turn);
        return;
      }
      case 'interrupt':
        for (const t of this.turns.values()) this.abort(t);
        this.turns.clear();
        // Timings of turns that were heard were read when their audio started.
        this.firstSentenceAt.clear();
        this.firstByteMs.clear();
        this.order.length = 0;
        // The carrier drops what it had queued: nothing passed on is still to play.
        this.playoutEndsAt = 0;
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
  }

  private async run(turn: TurnSynthesis): Promise<void> {
    try {
      const stream = await this.opts.provider.open(this.opts.stream, turn.controller.signal);
      if (turn.controller.signal.aborted) return;
      turn.stream = stream;
      // A reopened stream (retry) gets again what the failed one had been given.
      turn.written = 0;
      turn.endSent = false;
      this.feed(turn);
      for await (const ev of stream.events) {
        if (turn.controller.signal.aborted) return;
        if (ev.type === 'audio') {
          const now = this.opts.clock();
          if (turn.firstAudioAt === null) {
            turn.firstAudioAt = now;
            const sentAt = this.firstSentenceAt.get(turn.id);
            if (sentAt !== undefined) this.firstByteMs.set(turn.id, now - sentAt);
          }
          this.emit(turn, { kind: 'tts.audio', turnId: turn.id, mulaw: ev.audio, alignment: ev.alignment, at: now });
        } else {
          break;
        }
      }
      if (turn.controller.signal.aborted) return;
      this.finish(turn);
    } catch (err) {
      if (turn.controller.signal.aborted || (err instanceof Error && err.name === 'AbortError')) return;
      const error =
        err instanceof ProviderError
          ? err
          : new ProviderError({ provider: this.opts.provider.name, capability: 'tts', code: 'tts.failed', message: err instanceof Error ? err.message : String(err), retryable: true, cause: err });
      if (error.retryable && turn.firstAudioAt === null && !turn.retried) {
        turn.retried = true;
        turn.stream = null;
        this.push({ kind: 'error', error, fatal: false, at: this.opts.clock() }, 'up');
        await this.run(turn);
        return;
      }
      this.finish(turn);
      this.push({ kind: 'error', error, fatal: true, at: this.opts.clock() }, 'up');
    }
  }

  /**
   * Lets go the turn's sentences that may go now (each counted and passed on), writes them to
   * the stream once it is open, then `end()` once all went and the LLM is done; when one must
   * wait for playback to catch up, wakes then.
   */
  private feed(turn: TurnSynthesis): void {
    if (turn.controller.signal.aborted) return;
    clearWake(turn);
    while (turn.released < turn.sentences.length) {
      const ahead = this.aheadMs(turn);
      if (ahead > this.lookaheadMs) {
        turn.wake = setTimeout(() => {
          turn.wake = null;
          this.feed(turn);
        }, Math.ceil(ahead - this.lookaheadMs));
        break;
      }
      const text = turn.sentences[turn.released]!;
      // The turn's text as spoken, pieces joined by one space: the count does not depend on where the aggregator cut.
      this.push({ kind: 'usage', usage: { ttsCharacters: text.length + (turn.released > 0 ? 1 : 0) }, at: this.opts.clock() }, 'up');
      turn.released++;
      this.emit(turn, { kind: 'tts.sentence', turnId: turn.id, text, at: this.opts.clock() });
    }
    const stream = turn.stream;
    if (!stream) return;
    while (turn.written < turn.released) stream.sendText(`${turn.sentences[turn.written++]!} `, { flush: true });
    if (turn.ended && turn.released === turn.sentences.length && !turn.endSent) {
      turn.endSent = true;
      stream.end();
    }
  }

  /**
   * How far the end of the turn's audio so far is ahead of playback, ms: the audio passed on and
   * not yet played (earlier turns' too) plus the turn's own held audio. 0 before its first audio.
   */
  private aheadMs(turn: TurnSynthesis): number {
    if (this.lookaheadMs <= 0 || turn.firstAudioAt === null) return 0;
    return Math.max(0, this.playoutEndsAt - this.opts.clock()) + turn.heldAudioMs;
  }

  private abort(turn: TurnSynthesis): void {
    turn.controller.abort();
    clearWake(turn);
  }

  private finish(turn: TurnSynthesis): void {
    turn.finished = true;
    clearWake(turn);
    this.emit(turn, { kind: 'tts.done', turnId: turn.id, at: this.opts.clock() });
    if (this.order[0] === turn.id) this.advance();
  }

  /** Sends a frame now if its turn is the one speaking, else holds it. */
  private emit(turn: TurnSynthesis, frame: Frame): void {
    if (this.order[0] === turn.id) this.pass(frame);
    else {
      turn.held.push(frame);
      if (frame.kind === 'tts.audio') turn.heldAudioMs += this.playingMs(frame.mulaw);
    }
  }

  /** Passes a frame on; audio extends the reckoned playback. */
  private pass(frame: Frame): void {
    if (frame.kind === 'tts.audio') this.playoutEndsAt = Math.max(this.playoutEndsAt, this.opts.clock()) + this.playingMs(frame.mulaw);
    this.push(frame);
  }

  /** How long a chunk of the output format plays, ms. */
  private playingMs(audio: Uint8Array): number {
    return audio.byteLength / this.bytesPerMs;
  }

  private advance(): void {
    while (this.order.length > 0) {
      const head = this.turns.get(this.order[0]!);
      if (head && !head.finished) return;
      this.order.shift();
      if (head) {
        this.turns.delete(head.id);
        this.firstSentenceAt.delete(head.id);
      }
      const next = this.order[0] ? this.turns.get(this.order[0]) : undefined;
      if (next) {
        for (const f of next.held) this.pass(f);
        next.held = [];
        next.heldAudioMs = 0;
      }
    }
  }

  override async close(): Promise<void> {
    for (const t of this.turns.values()) this.abort(t);
    this.turns.clear();
    this.opts.provider.close?.();
  }
}

function clearWake(turn: TurnSynthesis): void {
  if (turn.wake) clearTimeout(turn.wake);
  turn.wake = null;
}
