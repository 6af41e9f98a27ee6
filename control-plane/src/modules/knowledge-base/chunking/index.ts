// Chunking: parsed sections → token-bounded, overlapping chunks (cl100k_base).
export { chunkSections, DEFAULT_CHUNK_OPTIONS, mergeContexts, splitByTokens, splitSentences } from './chunker.js';
export type { ChunkOptions } from './chunker.js';
export { countTokens } from './tokenizer.js';
