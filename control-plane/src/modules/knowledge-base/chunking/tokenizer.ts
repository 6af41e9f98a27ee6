/**
 * Token counting with OpenAI's cl100k_base BPE (js-tiktoken, pure JS). The rank table is
 * ~1.7 s to load, so it is loaded once per process, on first use.
 *
 * js-tiktoken's byte-pair merge is quadratic in the length of one pre-tokenised piece, and
 * text without spaces (CJK, base64, long URLs) is one piece: 800 CJK characters take ~4 s,
 * 8,000 would take minutes. So runs of more than {@link MAX_RUN} non-space characters are
 * encoded in slices of {@link RUN_SLICE} code points (measured: ~10k CJK characters/s, about
 * 1.5% more tokens than whole-run BPE; 32-point slices were half as fast for 0.2%). Counts
 * differ from cl100k's only inside such runs; ordinary prose is encoded exactly.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';

let encoder: Tiktoken | null = null;

/** The process's cl100k_base encoder (loaded on first call). */
export function cl100k(): Tiktoken {
  encoder ??= new Tiktoken(cl100kBase);
  return encoder;
}

/** Longest run of non-space code points encoded in one piece (see the module comment). */
export const MAX_RUN = 32;
/** Code points per slice of a longer run. */
export const RUN_SLICE = 8;
const LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1},}`, 'gu');
const HAS_LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1}}`, 'u');

/** Tokens of `text` with cl100k_base; special-token text (`<|endoftext|>`) counts as plain text. */
export function countTokens(text: string): number {
  return encodeTokens(text).length;
}

export function encodeTokens(text: string): number[] {
  const enc = cl100k();
  if (!HAS_LONG_RUN.test(text)) return enc.encode(text, [], []);
  const out: number[] = [];
  const append = (piece: string): void => {
    for (const t of enc.encode(piece, [], [])) out.push(t);
  };
  let last = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    if (m.index > last) append(text.slice(last, m.index));
    const codePoints = Array.from(m[0]);
    for (let i = 0; i < codePoints.length; i += RUN_SLICE) append(codePoints.slice(i, i + RUN_SLICE).join(''));
    last = m.index + m[0].length;
  }
  if (last < text.length) append(text.slice(last));
  return out;
}

export function decodeTokens(tokens: number[]): string {
  return cl100k().decode(tokens);
}
