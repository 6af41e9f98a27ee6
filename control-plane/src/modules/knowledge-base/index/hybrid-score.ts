/**
 * How a match's `score` is made (documented in docs/knowledge-base.md, "Index and search").
 *
 * - `vector` = max(0, cosine similarity) of the query's and the chunk's embeddings (same model).
 * - `text` = the share of the query's full-text terms that the chunk contains, each term
 *   weighted by its rarity in the tenant's indexed chunks of that model,
 *   idf = ln(1 + N / df): a product code found in one chunk weighs far more than `the`.
 *   Terms that occur in no chunk are left out (fillers, typos), so `text` is 0..1.
 * - `score` = 1 − (1 − vector) × (1 − TEXT_WEIGHT × text): a "noisy or". With no text match
 *   it is exactly the vector similarity; a chunk holding every term of the query scores at
 *   least TEXT_WEIGHT however far its vector is; both together score higher than either.
 *
 * `minScore` compares against this `score`.
 */
export const TEXT_WEIGHT = 0.8;

/**
 * Full-text candidates come from the query's rarest terms, as long as the chunks holding them
 * add up to at most this many; commoner terms still count in `text` for every candidate.
 */
export const TEXT_SCAN_ROWS = 500;

export interface QueryTerm {
  /** The normalised term, as in the chunks' search vectors. */
  lexeme: string;
  /** The lexeme as a one-term tsquery literal (quoted). */
  tsquery: string;
  /** The tenant's chunks of the model containing it. */
  df: number;
  weight: number;
}

/** Inverse document frequency of a term found in `df` of `totalChunks` chunks. */
export function termWeight(totalChunks: number, df: number): number {
  return Math.log(1 + Math.max(totalChunks, df, 1) / Math.max(df, 1));
}

/** Fuses the two signals into the match score, 0..1. */
export function hybridScore(vectorSimilarity: number, textShare: number): number {
  const v = Math.min(1, Math.max(0, vectorSimilarity));
  const t = Math.min(1, Math.max(0, textShare));
  return 1 - (1 - v) * (1 - TEXT_WEIGHT * t);
}

/** A short excerpt: the chunk's start, cut at a word boundary near `maxChars`. */
export function excerptOf(text: string, maxChars = 300): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= maxChars) return flat;
  const cut = flat.lastIndexOf(' ', maxChars);
  return `${flat.slice(0, cut > maxChars / 2 ? cut : maxChars)}…`;
}
