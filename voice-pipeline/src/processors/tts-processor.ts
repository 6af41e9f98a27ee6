import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';
import { ProviderError } from '../providers/provider-error.js';
import type { TtsProvider, TtsStream, TtsStreamOptions } from '../providers/types.js';

export interface TtsProcessorOptions {
  provider: TtsProvider;
  /** Must produce what the carrier plays: `ulaw_8000` for phone legs. */
  stream: TtsStreamOptions;
  clock: () => number;
}

interface TurnSynthesis {
  id: string;
  controller: AbortController;
  sentences: string[];
  ended: boolean;
  finished: boolean;
  retried: boolean;
  audioSeen: boolean;
  stream: TtsStream | null;
  /** Frames held back while an earlier turn is still speaking. */
  held: Frame[];
}

/**
 * Speaks each agent turn through one TTS stream, opened as the turn starts (hiding the
 * connection time behind the LLM's first token). Sentences are flushed one by one so
 * audio starts after the first. Turns play in the order they started: audio of a later
 * turn waits until the earlier one is done. `interrupt` aborts every stream at once.
 * A stream that fails before any audio is reopened once with the same text.
 */
export class TtsProcessor extends Processor {
  readonly name = 'TtsProcessor';
  private readonly turns = new Map<string, TurnSynthesis>();
  private readonly order: string[] = [];
  /** First sentence sent → first audio byte, per turn. */
  readonly firstByteMs = new Map<string, number>();
  private readonly firstSentenceAt = new Map<string, number>();

  constructor(private readonly opts: TtsProcessorOptions) {
    super();
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'agent.turn-start': {
        const turn: TurnSynthesis = { id: frame.turnId, controller: new AbortController(), sentences: [], ended: false, finished: false, retried: false, audioSeen: false, stream: null, held: [] };
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
        // The turn's text as spoken, pieces joined by one space: the count does not depend on where the aggregator cut.
        this.push({ kind: 'usage', usage: { ttsCharacters: frame.text.length + (turn.sentences.length > 1 ? 1 : 0) }, at: frame.at }, 'up');
        this.emit(turn, frame);
        turn.stream?.sendText(`${frame.text} `, { flush: true });
        return;
      }
      case 'llm.done': {
        const turn = this.turns.get(frame.turnId);
        if (!turn) return;
        turn.ended = true;
        turn.stream?.end();
        return;
      }
      case 'interrupt':
        for (const t of this.turns.values()) t.controller.abort();
        this.turns.clear();
        // Timings of turns that were heard were read when their audio started.
        this.firstSentenceAt.clear();
        this.firstByteMs.clear();
        this.order.length = 0;
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
      for (const s of turn.sentences) stream.sendText(`${s} `, { flush: true });
      if (turn.ended) stream.end();
      for await (const ev of stream.events) {
        if (turn.controller.signal.aborted) return;
        if (ev.type === 'audio') {
          if (!turn.audioSeen) {
            turn.audioSeen = true;
            const sentAt = this.firstSentenceAt.get(turn.id);
            if (sentAt !== undefined) this.firstByteMs.set(turn.id, this.opts.clock() - sentAt);
          }
          this.emit(turn, { kind: 'tts.audio', turnId: turn.id, mulaw: ev.audio, alignment: ev.alignment, at: this.opts.clock() });
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
      if (error.retryable && !turn.audioSeen && !turn.retried) {
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

  private finish(turn: TurnSynthesis): void {
    turn.finished = true;
    this.emit(turn, { kind: 'tts.done', turnId: turn.id, at: this.opts.clock() });
    if (this.order[0] === turn.id) this.advance();
  }

  /** Sends a frame now if its turn is the one speaking, else holds it. */
  private emit(turn: TurnSynthesis, frame: Frame): void {
    if (this.order[0] === turn.id) this.push(frame);
    else turn.held.push(frame);
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
        for (const f of next.held) this.push(f);
        next.held = [];
      }
    }
  }

  override async close(): Promise<void> {
    for (const t of this.turns.values()) t.controller.abort();
    this.turns.clear();
    this.opts.provider.close?.();
  }
}
