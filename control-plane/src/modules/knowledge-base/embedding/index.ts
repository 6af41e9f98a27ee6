// Embedding behind the `Embedder` interface (../types.ts): local, OpenAI-compatible, and the factory.
export { LocalEmbedder, LOCAL_EMBEDDING_MODEL } from './local-embedder.js';
export { OpenAiCompatibleEmbedder, EmbeddingError, KNOWN_EMBEDDING_DIMENSIONS, embeddingsUrl } from './openai-compatible-embedder.js';
export type { OpenAiCompatibleEmbedderOptions, EmbeddingErrorCode } from './openai-compatible-embedder.js';
export { createEmbedder } from './create-embedder.js';
export type { EmbeddingConfig } from './create-embedder.js';
export { cosine, normaliseInPlace } from './vectors.js';
