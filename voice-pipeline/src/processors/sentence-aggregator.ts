import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';

/** Shortest text sent to TTS as a sentence, so "Dr. " or "1. " do not make a clip each. */
const MIN_SENTENCE_CHARS = 12;
/** A long clause without a full stop is cut at a comma past this length. */
const CLAUSE_CHARS = 80;
/**
 * The first piece of a reply is cut at a clause boundary (`,` `;` `:`) once it has this
 * many characters (about five words, over a second of speech): the caller hears the agent
 * a clause earlier, and the rest streams to TTS while that plays. Measured with
 * `pnpm bench:calls`: a reply opening with a 130-character sentence waited ~140 ms for
 * its first full stop (the LLM streams a word every few ms), which the turn breakdown
 * shows as our overhead. Later pieces keep whole sentences (or {@link CLAUSE_CHARS}), so
 * the prosody of the rest is not chopped up.
 */
const FIRST_CLAUSE_CHARS = 24;

/**
 * Splits streamed LLM text into sentences for TTS, so the first audio starts as soon as
 * the first sentence (or, for the first piece, a long enough clause) is complete instead
 * of after the whole reply. On `interrupt` the buffered text of aborted turns is dropped.
 */
export class SentenceAggregator extends Processor {
  readonly name = 'SentenceAggregator';
  /** Per turn: the text not yet sent, and whether a piece of this turn was sent already. */
  private readonly buffers = new Map<string, { text: string; started: boolean }>();

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'llm.text': {
        const buffered = this.buffers.get(frame.turnId);
        const started = buffered?.started ?? false;
        const { sentences, rest } = splitSentences((buffered?.text ?? '') + frame.text, { first: !started });
        this.buffers.set(frame.turnId, { text: rest, started: started || sentences.length > 0 });
        for (const s of sentences) this.push({ kind: 'tts.sentence', turnId: frame.turnId, text: s, at: frame.at });
        return;
      }
      case 'llm.done': {
        const rest = (this.buffers.get(frame.turnId)?.text ?? '').trim();
        this.buffers.delete(frame.turnId);
        if (rest) this.push({ kind: 'tts.sentence', turnId: frame.turnId, text: rest, at: frame.at });
        this.push(frame);
        return;
      }
      case 'interrupt':
        this.buffers.clear();
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
  }
}

/**
 * Complete sentences at the front of `text`, and the unfinished rest. With `first` (nothing
 * of the reply was sent yet), the first piece may end at a clause boundary from
 * {@link FIRST_CLAUSE_CHARS} characters on.
 */
export function splitSentences(text: string, opts: { first?: boolean } = {}): { sentences: string[]; rest: string } {
  const sentences: string[] = [];
  let start = 0;
  const re = /[.!?…]+["')\]]*\s+|[,;:]\s+/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const end = m.index + m[0].length;
    const candidate = text.slice(start, end).trim();
    const isClause = /^[,;:]/.test(m[0]);
    const clauseChars = opts.first && sentences.length === 0 ? FIRST_CLAUSE_CHARS : CLAUSE_CHARS;
    if (candidate.length < (isClause ? clauseChars : MIN_SENTENCE_CHARS)) continue;
    sentences.push(candidate);
    start = end;
  }
  return { sentences, rest: text.slice(start) };
}
