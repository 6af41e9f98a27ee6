import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';

/** Shortest text sent to TTS as a sentence, so "Dr. " or "1. " do not make a clip each. */
const MIN_SENTENCE_CHARS = 12;
/** A long clause without a full stop is cut at a comma past this length. */
const CLAUSE_CHARS = 80;

/**
 * Splits streamed LLM text into sentences for TTS, so the first audio starts as soon as
 * the first sentence is complete instead of after the whole reply. On `interrupt` the
 * buffered text of aborted turns is dropped.
 */
export class SentenceAggregator extends Processor {
  readonly name = 'SentenceAggregator';
  private readonly buffers = new Map<string, string>();

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'llm.text': {
        const text = (this.buffers.get(frame.turnId) ?? '') + frame.text;
        const { sentences, rest } = splitSentences(text);
        this.buffers.set(frame.turnId, rest);
        for (const s of sentences) this.push({ kind: 'tts.sentence', turnId: frame.turnId, text: s, at: frame.at });
        return;
      }
      case 'llm.done': {
        const rest = (this.buffers.get(frame.turnId) ?? '').trim();
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

/** Complete sentences at the front of `text`, and the unfinished rest. */
export function splitSentences(text: string): { sentences: string[]; rest: string } {
  const sentences: string[] = [];
  let start = 0;
  const re = /[.!?…]+["')\]]*\s+|[,;:]\s+/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const end = m.index + m[0].length;
    const candidate = text.slice(start, end).trim();
    const isClause = /^[,;:]/.test(m[0]);
    if (candidate.length < (isClause ? CLAUSE_CHARS : MIN_SENTENCE_CHARS)) continue;
    sentences.push(candidate);
    start = end;
  }
  return { sentences, rest: text.slice(start) };
}
