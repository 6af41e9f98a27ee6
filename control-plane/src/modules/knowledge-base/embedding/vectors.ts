/** Small vector helpers shared by the embedders and their tests. */

/**
 * `v` scaled to unit length, in place, and returned. Throws on a zero or non-finite vector,
 * which no embedding model should produce and which would poison cosine search (NaN).
 */
export function normaliseInPlace(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw new RangeError(norm === 0 ? 'zero vector' : 'vector has non-finite values');
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) / norm;
  return v;
}

/** Cosine similarity; for unit vectors (every embedder's output) the dot product. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new RangeError(`dimension mismatch: ${a.length} vs ${b.length}`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
