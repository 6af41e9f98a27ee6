/** Knowledge-base parsing: what an upload is, and its text as sections (see docs/knowledge-base.md "Parsing"). */
export { detectDocumentType, KB_MIME_TYPES, SNIFF_HEAD_BYTES, type DetectInput, type DetectResult } from './detect-document-type.js';
export { parseDocument } from './parse-document.js';
export { parseAndChunkInWorker, parseInWorker, type ParseInWorkerOptions } from './parse-in-worker.js';
export {
  DEFAULT_PARSE_AND_CHUNK_TIMEOUT_MS,
  DEFAULT_PARSE_MEMORY_MB,
  DEFAULT_PARSE_TIMEOUT_MS,
  KbParserPool,
  type ChunkedDocument,
  type KbParserPoolOptions,
  type ParseOptions,
} from './parser-pool.js';
export { SECTION_TARGET_CHARS } from './sections.js';
