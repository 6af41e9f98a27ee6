/**
 * Splits a parsed document into overlapping chunks of about `targetTokens` cl100k tokens
 * (spec "Knowledge base": about 512 with overlap), for embedding and indexing.
 *
 * Rules, in order of precedence:
 * - a chunk never crosses a page boundary: sections are grouped into runs of one
 *   `pageNumber`, and each run is chunked on its own (overlap included);
 * - a chunk holds at most `maxTokens` tokens, counted exactly on its final text;
 * - text is cut between paragraphs (blank lines) where possible, else between sentences,
 *   and only a sentence longer than `targetTokens` is cut by tokens (near a word boundary);
 * - each chunk after the first of a run starts with the previous chunk's last sentences,
 *   up to `overlapTokens` (or the tail words of its last sentence when that alone is longer);
 * - consecutive small sections of one page share a chunk; its `context` lists their
 *   distinct contexts (see {@link mergeContexts}).
 */
import type { KbChunk, ParsedSection } from '../types.js';
import { countTokens, decodeTokens, encodeTokens } from './tokenizer.js';

export interface ChunkOptions {
  /** Where a chunk is closed: adding the next piece would pass this. Default 512. */
  targetTokens?: number;
  /** Tokens of the previous chunk's tail repeated at the start of the next. Default 64. */
  overlapTokens?: number;
  /** Hard ceiling per chunk, overlap included. Default 600. */
  maxTokens?: number;
}

export const DEFAULT_CHUNK_OPTIONS: Readonly<Required<ChunkOptions>> = Object.freeze({ targetTokens: 512, overlapTokens: 64, maxTokens: 600 });

/** Most contexts named in one chunk's `context`; more are summarised as "(+N more)". */
const MAX_CONTEXTS = 3;

/** A piece of text that is never cut further once packed: a paragraph, a sentence, or a token slice. */
interface Unit {
  text: string;
  tokens: number;
  /** Whitespace put before it when it follows another unit in a chunk. */
  sep: string;
  context: string | null;
  /** Repeated from the previous chunk: it does not count for the chunk's context and is never emitted alone. */
  overlap: boolean;
}

/** A sentence and the whitespace that preceded it in its paragraph (`''` for the first). */
interface Sentence {
  text: string;
  sep: string;
}

/**
 * Sentence ends: terminal punctuation (and closing quotes or brackets) followed by spaces and
 * a capital, digit or opening quote; a line break; or a CJK full stop. "e.g. the" stays whole,
 * "Dr. Smith" is cut (rare enough in knowledge-base prose to accept).
 */
const SENTENCE_BREAK = /(?<=[.!?…]["'”’)\]]*)[ \t]+(?=["'“‘([]?[\p{Lu}\p{N}])|(?<=[。！？])|[ \t]*\n\s*/gu;
const PARAGRAPH_BREAK = /\n[ \t]*\n\s*/;

/** Splits a paragraph into sentences, keeping the separator before each. */
export function splitSentences(paragraph: string): Sentence[] {
  const out: Sentence[] = [];
  let last = 0;
  let sep = '';
  for (const m of paragraph.matchAll(SENTENCE_BREAK)) {
    const text = paragraph.slice(last, m.index).trim();
    if (text !== '') {
      out.push({ text, sep: out.length === 0 ? '' : sep });
      sep = '';
    }
    // The whitespace before the next sentence: a line break wins over spaces.
    if (m[0].includes('\n')) sep = '\n';
    else if (sep === '' && m[0] !== '') sep = ' ';
    last = m.index + m[0].length;
  }
  const tail = paragraph.slice(last).trim();
  if (tail !== '') out.push({ text: tail, sep: out.length === 0 ? '' : sep });
  return out;
}

/**
 * Cuts text by tokens into pieces of at most `limit` tokens, moving each cut back to a token
 * that starts with whitespace when one is in the last fifth of the window, and never inside
 * a multi-byte character.
 */
export function splitByTokens(text: string, limit: number): string[] {
  const tokens = encodeTokens(text);
  const pieces: string[] = [];
  for (let start = 0; start < tokens.length; ) {
    let end = Math.min(start + limit, tokens.length);
    if (end < tokens.length) {
      for (let i = end; i > start + Math.floor(limit * 0.8); i--) {
        if (/^\s/.test(decodeTokens([tokens[i] as number]))) {
          end = i;
          break;
        }
      }
    }
    // A token can hold part of a UTF-8 sequence: cut before it rather than emit U+FFFD.
    while (end < tokens.length && end > start + 1 && decodeTokens(tokens.slice(start, end)).endsWith('\uFFFD')) end--;
    const piece = decodeTokens(tokens.slice(start, end)).trim();
    if (piece !== '') pieces.push(piece);
    start = end;
  }
  return pieces;
}

/**
 * Distinct contexts in order, joined with " | "; more than three become the first three and
 * "(+N more)". Null when no piece has a context.
 */
export function mergeContexts(contexts: readonly (string | null)[]): string | null {
  const distinct = [...new Set(contexts.filter((c): c is string => c !== null && c !== ''))];
  if (distinct.length === 0) return null;
  if (distinct.length <= MAX_CONTEXTS) return distinct.join(' | ');
  return `${distinct.slice(0, MAX_CONTEXTS).join(' | ')} (+${distinct.length - MAX_CONTEXTS} more)`;
}

const sepTokens = (sep: string): number => (sep.includes('\n') ? 1 : 0);

/** Units of one section: whole paragraphs when they fit `target`, else their sentences, else token slices. */
function sectionUnits(section: ParsedSection, target: number): Unit[] {
  const units: Unit[] = [];
  for (const paragraph of section.text.replace(/\r\n?/g, '\n').split(PARAGRAPH_BREAK)) {
    const trimmed = paragraph.trim();
    if (trimmed === '') continue;
    const add = (text: string, tokens: number, sep: string): void => {
      units.push({ text, tokens, sep: units.length === 0 ? '\n\n' : sep, context: section.context, overlap: false });
    };
    const tokens = countTokens(trimmed);
    if (tokens <= target) {
      add(trimmed, tokens, '\n\n');
      continue;
    }
    const sentences = splitSentences(trimmed);
    sentences.forEach((sentence, i) => {
      const sep = i === 0 ? '\n\n' : sentence.sep;
      // One sentence is the whole paragraph (text without sentence ends): already counted.
      const n = sentences.length === 1 && sentence.text === trimmed ? tokens : countTokens(sentence.text);
      if (n <= target) return add(sentence.text, n, sep);
      splitByTokens(sentence.text, target).forEach((piece, j) => add(piece, countTokens(piece), j === 0 ? sep : ' '));
    });
  }
  return units;
}

/**
 * The previous chunk's last sentences, up to `budget` tokens, as overlap units; when not even
 * its last sentence fits, that sentence's tail words.
 */
function overlapTail(units: readonly Unit[], budget: number): Unit[] {
  if (budget <= 0) return [];
  const taken: Unit[] = [];
  let used = 0;
  for (let u = units.length - 1; u >= 0; u--) {
    const unit = units[u] as Unit;
    const sentences = splitSentences(unit.text);
    for (let s = sentences.length - 1; s >= 0; s--) {
      const sentence = sentences[s] as Sentence;
      const sep = s === 0 ? unit.sep : sentence.sep;
      const tokens = countTokens(sentence.text);
      if (used + tokens + sepTokens(sep) > budget) {
        if (taken.length === 0) return tailWords(sentence.text, budget, unit.context);
        return taken;
      }
      used += tokens + sepTokens(sep);
      taken.unshift({ text: sentence.text, tokens, sep, context: unit.context, overlap: true });
    }
  }
  return taken;
}

/** The last `budget` tokens of a sentence, starting at a word boundary. */
function tailWords(text: string, budget: number, context: string | null): Unit[] {
  // Only the end is needed; a cl100k token is rarely over 12 characters.
  const end = text.slice(-budget * 12);
  if (!/\s/.test(end)) return [];
  const tokens = encodeTokens(end);
  const tail = decodeTokens(tokens.slice(Math.max(0, tokens.length - budget)));
  const start = tail.search(/\s\S/);
  const words = (start >= 0 ? tail.slice(start) : '').trim();
  return words === '' ? [] : [{ text: words, tokens: countTokens(words), sep: ' ', context, overlap: true }];
}

function joinUnits(units: readonly Unit[]): string {
  return units.map((u, i) => (i === 0 ? u.text : u.sep + u.text)).join('');
}

/** Token estimate of units joined: their counts plus one per line-break separator. */
function estimateOf(units: readonly Unit[]): number {
  return units.reduce((n, u, i) => n + u.tokens + (i === 0 ? 0 : sepTokens(u.sep)), 0);
}

/** Chunks one run of sections that share a page. */
function chunkRun(run: readonly ParsedSection[], o: Required<ChunkOptions>, out: KbChunk[]): void {
  const pageNumber = run[0]?.pageNumber ?? null;
  let current: Unit[] = [];
  // Overlap units always come first, so the chunk has content when its last unit is not overlap.
  let estimate = 0;

  const emit = (): void => {
    let units = current;
    const carry: Unit[] = [];
    // Counted exactly on the final text: the unit sum is an estimate (BPE merges across joins).
    // Over the ceiling, overlap goes first, then trailing pieces move on to the next chunk.
    let text = joinUnits(units);
    let tokenCount = units.length === 1 ? (units[0] as Unit).tokens : countTokens(text);
    while (tokenCount > o.maxTokens && units.length > 1) {
      if (units[0]?.overlap === true) {
        units = units.slice(1);
      } else {
        carry.unshift(units.at(-1) as Unit);
        units = units.slice(0, -1);
      }
      text = joinUnits(units);
      tokenCount = countTokens(text);
    }
    const content = units.filter((u) => !u.overlap);
    if (content.length > 0) {
      out.push({ position: out.length, text, tokenCount, pageNumber, context: mergeContexts(content.map((u) => u.context)) });
      current = overlapTail(units, o.overlapTokens);
    } else {
      current = [];
    }
    estimate = estimateOf(current);
    for (const unit of carry) add(unit);
  };

  const add = (unit: Unit): void => {
    if (current.at(-1)?.overlap === false && estimate + sepTokens(unit.sep) + unit.tokens > o.targetTokens) emit();
    // Overlap gives way when it and the unit would not fit under the ceiling.
    if (current.length > 0 && estimate + sepTokens(unit.sep) + unit.tokens > o.maxTokens) {
      while (current.length > 0 && estimateOf([...current, unit]) > o.maxTokens) current.shift();
      estimate = estimateOf(current);
    }
    estimate += (current.length === 0 ? 0 : sepTokens(unit.sep)) + unit.tokens;
    current.push(unit);
  };

  for (const section of run) {
    for (const unit of sectionUnits(section, o.targetTokens)) add(unit);
  }
  // Pieces carried over by an emit can leave content behind: emit until only overlap is left.
  while (current.at(-1)?.overlap === false) emit();
}

/**
 * Chunks a parsed document. Positions are 0-based in reading order; `tokenCount` is exact
 * (cl100k_base) and at most `maxTokens`. Empty or whitespace-only input gives no chunks.
 * CPU-bound and synchronous: about a second per MB of text on one core (plus ~1.7 s once per
 * process to load the tokenizer), so callers chunk large documents off the request path.
 */
export function chunkSections(sections: readonly ParsedSection[], options: ChunkOptions = {}): KbChunk[] {
  const o = { ...DEFAULT_CHUNK_OPTIONS, ...options };
  if (!Number.isInteger(o.targetTokens) || o.targetTokens < 1) throw new RangeError(`targetTokens must be a positive integer, got ${o.targetTokens}`);
  if (!Number.isInteger(o.overlapTokens) || o.overlapTokens < 0 || o.overlapTokens >= o.targetTokens) throw new RangeError(`overlapTokens must be an integer from 0 to targetTokens - 1, got ${o.overlapTokens}`);
  if (!Number.isInteger(o.maxTokens) || o.maxTokens < o.targetTokens) throw new RangeError(`maxTokens must be an integer of at least targetTokens, got ${o.maxTokens}`);
  const out: KbChunk[] = [];
  let run: ParsedSection[] = [];
  for (const section of sections) {
    if (section.text.trim() === '') continue;
    if (run.length > 0 && run[0]?.pageNumber !== section.pageNumber) {
      chunkRun(run, o, out);
      run = [];
    }
    run.push(section);
  }
  if (run.length > 0) chunkRun(run, o, out);
  return out;
}
