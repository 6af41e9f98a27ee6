/**
 * A generated, reproducible knowledge-base corpus for `pnpm bench:kb`: words drawn with a
 * Zipf distribution from a fixed vocabulary (so some words are in most chunks, most are
 * rare, as in real text), a product code like `XK-4471` in some chunks, and queries that
 * mix plain words with codes.
 */

/** Deterministic PRNG (mulberry32): the same seed gives the same corpus on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMMON = ['the', 'a', 'of', 'and', 'to', 'in', 'is', 'for', 'on', 'with', 'our', 'you', 'can', 'be', 'are', 'at', 'by', 'from', 'this', 'we'];
const SYLLABLES = ['ka', 'lo', 'mi', 'ner', 'tus', 'pa', 'ri', 'del', 'sen', 'vo', 'gra', 'bel', 'tor', 'shi', 'qua', 'mon', 'fe', 'lin', 'dar', 'zu'];

export class KbCorpus {
  private readonly rand: () => number;
  private readonly vocabulary: string[];
  /** Cumulative Zipf weights over `vocabulary`. */
  private readonly cumulative: Float64Array;

  constructor(seed = 4471, vocabularySize = 20_000) {
    this.rand = prng(seed);
    const words = new Set<string>(COMMON);
    while (words.size < vocabularySize) {
      const n = 2 + Math.floor(this.rand() * 3);
      let w = '';
      for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(this.rand() * SYLLABLES.length)];
      words.add(w);
    }
    this.vocabulary = [...words];
    this.cumulative = new Float64Array(this.vocabulary.length);
    let sum = 0;
    for (let i = 0; i < this.vocabulary.length; i++) this.cumulative[i] = sum += 1 / (i + 1);
  }

  word(): string {
    const x = this.rand() * this.cumulative[this.cumulative.length - 1]!;
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return this.vocabulary[lo]!;
  }

  code(): string {
    const letters = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
    const l = () => letters[Math.floor(this.rand() * letters.length)];
    return `${l()}${l()}-${1000 + Math.floor(this.rand() * 9000)}`;
  }

  /** A chunk of about `words` words in sentences, with a code in a third of them. */
  chunk(words: number): { text: string; code: string | null } {
    const parts: string[] = [];
    let sentence: string[] = [];
    for (let i = 0; i < words; i++) {
      sentence.push(this.word());
      if (sentence.length >= 8 + Math.floor(this.rand() * 12)) {
        parts.push(`${sentence.join(' ')}.`);
        sentence = [];
      }
    }
    if (sentence.length > 0) parts.push(`${sentence.join(' ')}.`);
    const code = this.rand() < 1 / 3 ? this.code() : null;
    if (code) parts.splice(Math.floor(this.rand() * parts.length), 0, `Reference ${code}.`);
    return { text: parts.join(' '), code };
  }

  /** A question of a few words, sometimes about a known code. */
  query(knownCodes: string[]): string {
    const words = Array.from({ length: 3 + Math.floor(this.rand() * 5) }, () => this.word());
    if (knownCodes.length > 0 && this.rand() < 0.5) words.splice(1, 0, knownCodes[Math.floor(this.rand() * knownCodes.length)]!);
    return `what ${words.join(' ')}?`;
  }

  /** A random unit vector (stands in for an embedding when no local embedder is available). */
  randomVector(dims: number): Float32Array {
    const v = new Float32Array(dims);
    let norm = 0;
    for (let i = 0; i < dims; i++) {
      // Sum of uniforms: roughly normal, enough for an isotropic direction.
      const x = this.rand() + this.rand() + this.rand() - 1.5;
      v[i] = x;
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    for (let i = 0; i < dims; i++) v[i] = v[i]! / norm;
    return v;
  }
}
