import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';

/** Shortest text sent to TTS as a sentence after the first piece, so "1. " does not make a clip of its own. */
const MIN_SENTENCE_CHARS = 12;
/** A long clause without a full stop is cut at a comma past this length (after the first piece). */
const CLAUSE_CHARS = 80;
/**
 * The first piece of a reply goes to TTS as early as it can be spoken on its own: at the
 * first sentence end or clause boundary (`,` `;` `:`) once it has this many characters
 * ("Yes," "Sure." "Of course."), or, with no boundary yet, after {@link FIRST_PIECE_WORDS}
 * complete words. The caller hears the agent that much earlier, and the rest streams to
 * TTS while the first piece plays; the TTS stream keeps the earlier text as context, so
 * the join is not heard as a new sentence. Measured with `pnpm bench:calls` (#5): the LLM
 * streams a word every few ms, and waiting for a reply's first full stop or long clause
 * (14 words into the bench's long answer) was the largest part of the time between the
 * first token and the first audio. Eight words (about 1.5 s of speech) let most short
 * sentences end on their own ("We are open from nine to five.") while a long run-on still
 * starts early. Later pieces keep whole sentences (or
 * {@link CLAUSE_CHARS}), so the prosody of the rest is not chopped up.
 */
const FIRST_PIECE_MIN_CHARS = 4;
const FIRST_PIECE_WORDS = 8;
const FIRST_WORDS_RE = new RegExp(`^\\s*(?:\\S+\\s+){${FIRST_PIECE_WORDS}}`);
/**
 * Words after which a full stop does not end a sentence ("Dr. Smith", "No. 5", "e.g. this").
 * Single letters (initials, "J. Smith") are treated the same.
 */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'sr', 'jr', 'mt', 'ave', 'no', 'vs', 'e.g', 'i.e', 'approx', 'apt', 'fig', 'dept', 'est']);

/**
 * Splits streamed LLM text into sentences for TTS, so the first audio starts as soon as
 * the first sentence (or, for the first piece, a long enough clause) is complete instead
 * of after the whole reply. On `interrupt` the buffered text of aborted turns is dropped.
 */
export class SentenceAggregator extends Processor {
  readonly name = 'SentenceAggregator';
  /** Per turn: the text not yet sent, and whether a piece of this turn was sent already. */
  private readonly buffers = new Map<string, { text: string; started: boolean; firstTextAt: number }>();
  /**
   * Per turn: first text from the LLM → first piece sent to TTS, ms (frame times). Read and
   * deleted by the session when the turn's audio starts; cleared on `interrupt`.
   */
  readonly firstPhraseMs = new Map<string, number>();

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'llm.text': {
        const buffered = this.buffers.get(frame.turnId);
        const started = buffered?.started ?? false;
        const firstTextAt = buffered?.firstTextAt ?? frame.at;
        const { sentences, rest } = splitSentences((buffered?.text ?? '') + frame.text, { first: !started });
        this.buffers.set(frame.turnId, { text: rest, started: started || sentences.length > 0, firstTextAt });
        if (!started && sentences.length > 0) this.recordFirstPhrase(frame.turnId, frame.at - firstTextAt);
        for (const s of sentences) this.push({ kind: 'tts.sentence', turnId: frame.turnId, text: s, at: frame.at });
        return;
      }
      case 'llm.done': {
        const buffered = this.buffers.get(frame.turnId);
        const rest = (buffered?.text ?? '').trim();
        this.buffers.delete(frame.turnId);
        if (rest && buffered && !buffered.started) this.recordFirstPhrase(frame.turnId, frame.at - buffered.firstTextAt);
        if (rest) this.push({ kind: 'tts.sentence', turnId: frame.turnId, text: rest, at: frame.at });
        this.push(frame);
        return;
      }
      case 'interrupt':
        this.buffers.clear();
        this.firstPhraseMs.clear();
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
  }

  private recordFirstPhrase(turnId: string, ms: number): void {
    // Turns nobody reads (the greeting and other scripted lines) must not pile up over a long call.
    if (this.firstPhraseMs.size >= 16) this.firstPhraseMs.delete(this.firstPhraseMs.keys().next().value!);
    this.firstPhraseMs.set(turnId, ms);
  }
}

/**
 * Complete sentences at the front of `text`, and the unfinished rest. With `first` (nothing
 * of the reply was sent yet), the first piece may be short or end at a clause boundary
 * ({@link FIRST_PIECE_MIN_CHARS}), or be cut after {@link FIRST_PIECE_WORDS} words.
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
    const first = opts.first === true && sentences.length === 0;
    const minChars = first ? FIRST_PIECE_MIN_CHARS : isClause ? CLAUSE_CHARS : MIN_SENTENCE_CHARS;
    if (candidate.length < minChars) continue;
    if (m[0].trim() === '.' && endsWithAbbreviation(text, m.index)) continue;
    sentences.push(candidate);
    start = end;
  }
  if (opts.first === true && sentences.length === 0) {
    const words = FIRST_WORDS_RE.exec(text.slice(start));
    if (words) {
      sentences.push(words[0].trim());
      start += words[0].length;
    }
  }
  return { sentences, rest: text.slice(start) };
}

/** The word before the full stop at `dotAt` is an abbreviation or an initial. */
function endsWithAbbreviation(text: string, dotAt: number): boolean {
  let i = dotAt;
  while (i > 0 && !/\s/.test(text[i - 1]!)) i--;
  const word = text.slice(i, dotAt).replace(/^["'([]+/, '').toLowerCase();
  return (word.length === 1 && /\p{L}/u.test(word)) || ABBREVIATIONS.has(word);
}
