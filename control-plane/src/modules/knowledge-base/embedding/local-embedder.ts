/**
 * The built-in embedder: no network, deterministic, a few thousand chunks per second on one
 * core. It is lexical feature hashing with a small concept table (voice-pipeline's
 * `hashEmbedding`, also what the OpenAI simulator answers with), not a neural model; see
 * docs/knowledge-base.md "Chunking and embedding" for what it can and cannot match.
 */
import { HASH_EMBEDDING_DIMENSIONS, HASH_EMBEDDING_MODEL, hashEmbedding } from '@vap/voice-pipeline';
import type { Embedder } from '../types.js';

export const LOCAL_EMBEDDING_MODEL = HASH_EMBEDDING_MODEL;

/** Texts embedded between yields to the event loop (~50 ms of 512-token chunks). */
export const LOCAL_EMBED_SLICE = 128;

export class LocalEmbedder implements Embedder {
  readonly model = LOCAL_EMBEDDING_MODEL;
  readonly dimensions = HASH_EMBEDDING_DIMENSIONS;

  /**
   * Symmetric: queries and documents are embedded alike. CPU work on the caller's thread, in
   * slices of {@link LOCAL_EMBED_SLICE} texts with a turn of the event loop between them, so a
   * document of thousands of chunks does not stall requests for seconds.
   */
  async embed(texts: string[], _kind: 'document' | 'query'): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += LOCAL_EMBED_SLICE) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const text of texts.slice(i, i + LOCAL_EMBED_SLICE)) out.push(hashEmbedding(text, this.dimensions));
    }
    return out;
  }
}
