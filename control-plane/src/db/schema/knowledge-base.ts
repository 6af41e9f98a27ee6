import { sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import { check, customType, index, integer, jsonb, pgTable, primaryKey, real, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { KbDocumentType } from '../../modules/knowledge-base/types.js';
import { agents } from './agents.js';
import { tenants } from './tenants.js';

/**
 * The spec's document statuses. `pending` is reserved (a document waiting for a worker
 * before its job starts); uploads start at `processing`, end at `indexed` or `failed`, and a
 * reindex goes back to `processing`. Only `indexed` documents are searched.
 */
export type KbDocumentStatus = 'pending' | 'processing' | 'indexed' | 'failed';

/**
 * The full-text configuration of the knowledge base: `simple` (no stemming, no stop words,
 * any language), so codes, numbers and names match as written. Besides the text as parsed,
 * the vector holds two more spellings of every code-like token (letters or digits joined by
 * `-_./#:`): separators as spaces (`XK-4471` also gives `4471`) and separators removed
 * (`xk4471`), so `XK-4471`, `XK 4471`, `xk4471` and `4471` all find it. Only code-like
 * tokens are re-parsed, which keeps the generated column cheap. The same expression builds
 * the query's terms, so both sides always agree.
 */
export function kbTsvectorExpression(textExpr: string): string {
  const codes = `regexp_replace(${textExpr}, '([^[:space:]]*[[:alnum:]][-_./#:]+[[:alnum:]][^[:space:]]*)|[^[:space:]]+', '\\1', 'g')`;
  return `(to_tsvector('simple'::regconfig, ${textExpr}) || to_tsvector('simple'::regconfig, regexp_replace(${codes}, '[-_./#:]+', ' ', 'g') || ' ' || regexp_replace(${codes}, '([[:alnum:]])[-_./#:]+(?=[[:alnum:]])', '\\1', 'g')))`;
}

const tsvector = customType<{ data: string }>({
  dataType() {
    return 'tsvector';
  },
});

/** One uploaded document (spec "Knowledge-base document"). */
export const kbDocuments = pgTable(
  'kb_documents',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    filename: text('filename').notNull(),
    /** The spec's supported MIME type the content was recognised as. */
    mimeType: text('mime_type').notNull(),
    documentType: text('document_type').$type<KbDocumentType>().notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    /** Key of the original file in the object store (deleted with the document). */
    storageKey: text('storage_key').notNull(),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    status: text('status').$type<KbDocumentStatus>().notNull().default('processing'),
    /** 0..100 while processing; 100 once indexed. */
    progress: integer('progress').notNull().default(0),
    /** Why processing failed, shown to users; null otherwise. */
    error: text('error'),
    /** Model of the document's current vectors; null until first indexed. */
    embeddingModel: text('embedding_model'),
    chunkCount: integer('chunk_count').notNull().default(0),
    uploadedAt: timestamp('uploaded_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** When the current chunks were written (the spec's `indexedAt`); also the search cache's version of the document. */
    processedAt: timestamp('processed_at', { withTimezone: true, mode: 'date' }),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    index('kb_documents_tenant_uploaded_idx').on(t.tenantId, t.uploadedAt, t.id),
    index('kb_documents_tenant_model_idx').on(t.tenantId, t.embeddingModel).where(sql`status = 'indexed'`),
    check('kb_documents_progress_range', sql`${t.progress} BETWEEN 0 AND 100`),
  ],
);

/** Which agents use which documents (the document's `assignedAgentIds`, the agent's `knowledgeBaseIds`). */
export const kbDocumentAgents = pgTable(
  'kb_document_agents',
  {
    documentId: text('document_id').notNull().references(() => kbDocuments.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull().references(() => agents.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.documentId, t.agentId] }), index('kb_document_agents_agent_idx').on(t.agentId)],
);

/**
 * One chunk with its vector. `embedding` is always a plain `real[]` so the table is the same
 * with or without pgvector; with pgvector each model gets a partial HNSW index over
 * `embedding::vector(<dims>)` (created by the index module, not here: its dimensions are
 * only known when the model is first used). `search_vector` is generated from the text
 * and its context, see {@link kbTsvectorExpression}.
 */
export const kbChunks = pgTable(
  'kb_chunks',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    documentId: text('document_id').notNull().references(() => kbDocuments.id, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    text: text('text').notNull(),
    tokenCount: integer('token_count').notNull(),
    pageNumber: integer('page_number'),
    context: text('context'),
    /** Copy of the document's metadata when the chunk was written (returned with matches). */
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    embeddingModel: text('embedding_model').notNull(),
    embedding: real('embedding').array().notNull(),
    searchVector: tsvector('search_vector')
      .notNull()
      .generatedAlwaysAs((): SQL => sql.raw(kbTsvectorExpression(`(coalesce(context, '') || ' ' || text)`))),
  },
  (t) => [
    uniqueIndex('kb_chunks_document_position_key').on(t.documentId, t.position),
    index('kb_chunks_tenant_model_idx').on(t.tenantId, t.embeddingModel),
    index('kb_chunks_search_vector_idx').using('gin', t.searchVector),
  ],
);

/** Every embedding model that has vectors in the index, with its dimensions (one per model, checked on write). */
export const kbEmbeddingModels = pgTable('kb_embedding_models', {
  model: text('model').primaryKey(),
  dimensions: integer('dimensions').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

/**
 * How many chunks of a tenant's model contain each full-text term (document frequency),
 * kept exact by the index on every write and delete. Search weighs query terms by rarity
 * (idf) from here: counting matches at query time costs a heap visit per matching chunk.
 */
export const kbTermStats = pgTable(
  'kb_term_stats',
  {
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    embeddingModel: text('embedding_model').notNull(),
    lexeme: text('lexeme').notNull(),
    chunkCount: integer('chunk_count').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.embeddingModel, t.lexeme] })],
);
