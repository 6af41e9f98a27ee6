// The knowledge base's Postgres index: chunk writes, deletes and hybrid search.
export { KbIndex, KbIndexError } from './kb-index.js';
export type { KbIndexErrorCode, KbSearchMatch, KbSearchParams, KbSearchResult } from './kb-index.js';
export { detectVectorSupport } from './vector-support.js';
export type { VectorSupport } from './vector-support.js';
export { FallbackVectorCache } from './fallback-vector-cache.js';
export { TEXT_WEIGHT, hybridScore } from './hybrid-score.js';
