import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ObjectStore } from '@vap/shared';
import { createEmbedder } from './embedding/index.js';
import type { EmbeddingConfig } from './embedding/index.js';
import { KbIndex, detectVectorSupport } from './index/index.js';
import { KbParserPool } from './parsing/index.js';
import type { Embedder } from './types.js';

/**
 * The knowledge base's parts one process shares: the index (it holds the fallback vector
 * cache), the configured embedder, the object store of original files, the parser workers,
 * and the directory for uploads in transit. One per control plane: the API writes with it,
 * the indexing job reads with it.
 */
export interface KnowledgeBase {
  index: KbIndex;
  embedder: Embedder;
  store: ObjectStore;
  parser: KbParserPool;
  /** Uploads are streamed here before they are stored (`DATA_DIR/tmp/knowledge-base`). */
  tempDir: string;
  close(): Promise<void>;
}

export async function createKnowledgeBase(opts: {
  pool: pg.Pool;
  store: ObjectStore;
  embedding: EmbeddingConfig;
  dataDir: string;
  log?: Logger;
  /** Replaces the configured embedder (tests). */
  embedder?: Embedder;
}): Promise<KnowledgeBase> {
  // Detected on first use, so the app builds while the database is unreachable.
  const vectorSupport = async () => {
    const support = await detectVectorSupport(opts.pool);
    if (support.kind === 'fallback') opts.log?.info({ reason: support.reason }, 'knowledge base: pgvector unavailable, exact vector search in process');
    else opts.log?.info({ pgvector: support.version }, 'knowledge base: pgvector HNSW search');
    return support;
  };
  const tempDir = resolve(opts.dataDir, 'tmp', 'knowledge-base');
  await mkdir(tempDir, { recursive: true });
  const parser = new KbParserPool();
  return {
    index: new KbIndex({ pool: opts.pool, vectorSupport }),
    embedder: opts.embedder ?? createEmbedder(opts.embedding),
    store: opts.store,
    parser,
    tempDir,
    close: () => parser.close(),
  };
}
