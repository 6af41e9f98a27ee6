/**
 * The built-in embedder: no network, deterministic, a few thousand chunks per second on one
 * core. It is lexical feature hashing with a small concept table (voice-pipeline's
 * `hashEmbedding`, also what the OpenAI simulator answers with), not a neural model; see
 * docs/knowledge-base.md "Chunking and embedding" for what it can and cannot match.
 */
import { HASH_EMBEDDING_DIMENSIONS, HASH_EMBEDDING_MODEL, hashEmbedding } from '@vap/voice-pipeline';
import type { Embedder } from '../types.js';

export const LOCAL_EMBEDDING_MODEL = HASH_EMBEDDING_MODEL;

export class LocalEmbedder implements Embedder {
  readonly model = LOCAL_EMBEDDING_MODEL;
  readonly dimensions = HASH_EMBEDDING_DIMENSIONS;

  /** Symmetric: queries and documents are embedded alike. Synchronous work behind a promise. */
  async embed(texts: string[], _kind: 'document' | 'query'): Promise<Float32Array[]> {
    return texts.map((text) => hashEmbedding(text, this.dimensions));
  }
}
