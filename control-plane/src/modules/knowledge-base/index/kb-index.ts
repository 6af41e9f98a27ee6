import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { kbTsvectorExpression } from '../../../db/schema/knowledge-base.js';
import { inPgTransaction } from '../../../db/pg-transaction.js';
import type { KbChunk } from '../types.js';
import { FallbackVectorCache, normalised } from './fallback-vector-cache.js';
import type { CachedDocumentRef } from './fallback-vector-cache.js';
import { TEXT_SCAN_ROWS, excerptOf, hybridScore, termWeight } from './hybrid-score.js';
import type { QueryTerm } from './hybrid-score.js';
import type { VectorSupport } from './vector-support.js';

export interface KbSearchParams {
  tenantId: string;
  query: string;
  /** The query's embedding by `model` (kind `query`). */
  queryVector: Float32Array;
  /** Only chunks embedded by this model are compared (never two models in one search). */
  model: string;
  /** Restricts the search to these documents (unknown or other tenants' ids match nothing; `[]` matches nothing). Absent: all. */
  documentIds?: string[];
  /** At most this many matches, best first. Default 5. */
  topK?: number;
  /** Matches scoring below this are dropped; see hybrid-score.ts for what `score` is. Default 0. */
  minScore?: number;
}

export interface KbSearchMatch {
  documentId: string;
  documentName: string;
  chunkId: string;
  /** 0..1, see hybrid-score.ts. */
  score: number;
  /** The chunk's start, about 300 characters. */
  excerpt: string;
  /** The whole chunk, for retrieval-augmented prompts. */
  text: string;
  context: string | null;
  pageNumber: number | null;
  metadata: Record<string, string>;
  /** The two signals behind `score`, for debugging and tuning. */
  vectorSimilarity: number;
  textShare: number;
}

export interface KbSearchResult {
  matches: KbSearchMatch[];
  /**
   * Candidates scoring at least `minScore`: the union of the nearest chunks by vector and the
   * best full-text chunks, each list `max(40, 4 × topK)` long, so never more than twice that.
   */
  totalMatches: number;
}

export type KbIndexErrorCode = 'document_not_found' | 'dimension_mismatch' | 'invalid_vectors';

export class KbIndexError extends Error {
  constructor(
    readonly code: KbIndexErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'KbIndexError';
  }
}

interface Candidate {
  chunkId: string;
  documentId: string;
  similarity: number | null;
}

const INSERT_BATCH = 500;
/** The chunk's search vector as the table generates it; query terms go through the same expression. */
const QUERY_TSVECTOR = kbTsvectorExpression('$1::text');

/**
 * The knowledge base's Postgres index: writes a document's chunks and vectors, deletes
 * them, and runs hybrid (vector + full-text) search. One per process: it holds the
 * fallback vector cache and remembers which HNSW indexes exist.
 */
export class KbIndex {
  private readonly pool: pg.Pool;
  private readonly cache: FallbackVectorCache;
  private readonly modelDims = new Map<string, number>();
  private readonly detect: () => Promise<VectorSupport>;
  private detected: Promise<VectorSupport> | undefined;

  /**
   * `vectorSupport` is what {@link detectVectorSupport} found, or how to find it: then it is
   * asked on first use (not at start-up, so a control plane builds while its database is
   * unreachable) and asked again after a failure.
   */
  constructor(opts: { pool: pg.Pool; vectorSupport: VectorSupport | (() => Promise<VectorSupport>); cache?: FallbackVectorCache }) {
    this.pool = opts.pool;
    const given = opts.vectorSupport;
    this.detect = typeof given === 'function' ? given : async () => given;
    this.cache = opts.cache ?? new FallbackVectorCache();
  }

  /** How this database finds nearest vectors (detected once, on first use). */
  vectorSupport(): Promise<VectorSupport> {
    this.detected ??= this.detect().catch((err: unknown) => {
      this.detected = undefined;
      throw err;
    });
    return this.detected;
  }

  /**
   * Replaces all chunks of a document with `chunks` and their `vectors` (same order) in one
   * transaction, and marks the document `indexed` (progress 100, `embeddingModel`, `chunkCount`,
   * `processedAt`) in it: readers see the old chunk set or the new one, never a mix, and never
   * vectors of two models for one document.
   */
  async replaceDocumentChunks(documentId: string, model: string, chunks: KbChunk[], vectors: Float32Array[]): Promise<{ chunkIds: string[] }> {
    if (vectors.length !== chunks.length) throw new KbIndexError('invalid_vectors', `${chunks.length} chunks but ${vectors.length} vectors`);
    const dims = vectors[0]?.length ?? (await this.registeredDims(model)) ?? 0;
    for (const [i, v] of vectors.entries()) {
      if (v.length !== dims) throw new KbIndexError('invalid_vectors', `vector ${i} has ${v.length} dimensions, expected ${dims}`);
      let norm = 0;
      for (const x of v) {
        if (!Number.isFinite(x)) throw new KbIndexError('invalid_vectors', `vector ${i} holds a non-finite value`);
        norm += x * x;
      }
      if (norm === 0) throw new KbIndexError('invalid_vectors', `vector ${i} is all zeros`);
    }
    if (vectors.length > 0) await this.ensureModel(model, dims);

    const chunkIds = chunks.map(() => randomUUID());
    const { tenantId, version } = await inPgTransaction(this.pool, async (client) => {
      const doc = await client.query<{ tenant_id: string; metadata: Record<string, string> }>(
        'select tenant_id, metadata from kb_documents where id = $1 for update',
        [documentId],
      );
      const row = doc.rows[0];
      if (!row) throw new KbIndexError('document_not_found', `document ${documentId} does not exist`);
      const tenantId = row.tenant_id;
      await lockTenantStats(client, tenantId);
      await client.query(DECREMENT_TERM_STATS, [documentId, tenantId]);
      await client.query('delete from kb_chunks where document_id = $1', [documentId]);
      for (let start = 0; start < chunks.length; start += INSERT_BATCH) {
        const batch = chunks.slice(start, start + INSERT_BATCH);
        const flat: string[] = [];
        for (let i = start; i < start + batch.length; i++) for (const x of vectors[i]!) flat.push(x.toPrecision(9));
        await client.query(
          `insert into kb_chunks (id, tenant_id, document_id, position, text, token_count, page_number, context, metadata, embedding_model, embedding)
           select u.id, $2, $3, u.position, u.text, u.token_count, u.page_number, u.context, $4::jsonb, $5,
                  ($6::real[])[((u.ord - 1) * $7 + 1):(u.ord * $7)]
           from unnest($1::text[], $8::int[], $9::text[], $10::int[], $11::int[], $12::text[])
                with ordinality as u(id, position, text, token_count, page_number, context, ord)`,
          [
            chunkIds.slice(start, start + batch.length),
            tenantId,
            documentId,
            JSON.stringify(row.metadata ?? {}),
            model,
            `{${flat.join(',')}}`,
            dims,
            batch.map((c) => c.position),
            batch.map((c) => c.text),
            batch.map((c) => c.tokenCount),
            batch.map((c) => c.pageNumber),
            batch.map((c) => c.context),
          ],
        );
      }
      await client.query(INCREMENT_TERM_STATS, [documentId, tenantId, model]);
      const updated = await client.query<{ version: string }>(
        `update kb_documents set status = 'indexed', progress = 100, error = null, embedding_model = $2, chunk_count = $3,
                processed_at = clock_timestamp(), updated_at = clock_timestamp()
         where id = $1 returning ${VERSION_SQL} as version`,
        [documentId, model, chunks.length],
      );
      return { tenantId, version: updated.rows[0]!.version };
    });
    if ((await this.vectorSupport()).kind === 'fallback') {
      this.cache.forget(tenantId, documentId);
      this.cache.put(tenantId, model, documentId, version, chunkIds, vectors);
    }
    return { chunkIds };
  }

  /** Deletes a document with its chunks, vectors and agent assignments; false when the tenant has no such document. */
  async deleteDocument(tenantId: string, documentId: string): Promise<boolean> {
    const deleted = await inPgTransaction(
      this.pool,
      async (client) => {
        await lockTenantStats(client, tenantId);
        await client.query(DECREMENT_TERM_STATS, [documentId, tenantId]);
        const r = await client.query('delete from kb_documents where id = $1 and tenant_id = $2', [documentId, tenantId]);
        return (r.rowCount ?? 0) > 0;
      },
      // Nothing of the tenant's was deleted: the term counts must not move either.
      (wasDeleted) => wasDeleted,
    );
    this.cache.forget(tenantId, documentId);
    return deleted;
  }

  /** Hybrid search over the tenant's `indexed` documents whose vectors come from `params.model`. */
  async search(params: KbSearchParams): Promise<KbSearchResult> {
    const topK = params.topK ?? 5;
    const minScore = params.minScore ?? 0;
    const pool = Math.max(40, 4 * topK);
    const dims = await this.registeredDims(params.model);
    const indexed = await this.indexedDocuments(params.tenantId, params.model);
    if (dims === null || indexed.length === 0 || topK <= 0) return { matches: [], totalMatches: 0 };
    if (params.queryVector.length !== dims) {
      throw new KbIndexError('dimension_mismatch', `query vector has ${params.queryVector.length} dimensions, model ${params.model} has ${dims}`);
    }
    const wanted = params.documentIds ? new Set(params.documentIds) : null;
    const searchDocs = wanted ? indexed.filter((d) => wanted.has(d.id)) : indexed;
    if (searchDocs.length === 0) return { matches: [], totalMatches: 0 };
    const docIds = searchDocs.map((d) => d.id);
    const totalChunks = indexed.reduce((n, d) => n + d.chunkCount, 0);

    const terms = await this.queryTerms(params.tenantId, params.model, params.query, totalChunks);
    const query = normalised(params.queryVector);
    const [vectorHits, textHits] = await Promise.all([
      this.vectorCandidates(params, dims, indexed, wanted ? new Set(docIds) : null, docIds, query, pool),
      this.textCandidates(params, docIds, terms, pool),
    ]);
    const candidates = new Map<string, Candidate>();
    for (const h of vectorHits) candidates.set(h.chunkId, h);
    for (const h of textHits) if (!candidates.has(h.chunkId)) candidates.set(h.chunkId, h);
    if (candidates.size === 0) return { matches: [], totalMatches: 0 };

    const rows = await this.fetchChunks(candidates, terms, query, dims);
    const names = new Map(searchDocs.map((d) => [d.id, d.name]));
    const totalWeight = terms.reduce((s, t) => s + t.weight, 0);
    const scored: KbSearchMatch[] = rows.map((r) => {
      const similarity = r.similarity;
      const textShare = totalWeight > 0 ? Math.min(1, r.text_weight / totalWeight) : 0;
      return {
        documentId: r.document_id,
        documentName: names.get(r.document_id) ?? '',
        chunkId: r.id,
        score: hybridScore(similarity, textShare),
        excerpt: excerptOf(r.text),
        text: r.text,
        context: r.context,
        pageNumber: r.page_number,
        metadata: r.metadata ?? {},
        vectorSimilarity: similarity,
        textShare,
      };
    });
    const passing = scored.filter((m) => m.score >= minScore);
    passing.sort((a, b) => b.score - a.score || b.vectorSimilarity - a.vectorSimilarity || (a.chunkId < b.chunkId ? -1 : 1));
    return { matches: passing.slice(0, topK), totalMatches: passing.length };
  }

  /** The tenant's indexed documents of this model with their chunk-set versions. */
  private async indexedDocuments(tenantId: string, model: string): Promise<(CachedDocumentRef & { name: string; chunkCount: number })[]> {
    const r = await this.pool.query<{ id: string; name: string; chunk_count: number; version: string }>(
      `select id, name, chunk_count, ${VERSION_SQL} as version from kb_documents
       where tenant_id = $1 and status = 'indexed' and embedding_model = $2`,
      [tenantId, model],
    );
    return r.rows.map((d) => ({ id: d.id, name: d.name, chunkCount: d.chunk_count, version: d.version }));
  }

  /** The query's distinct full-text terms found in the tenant's chunks of this model, with their chunk counts. */
  private async queryTerms(tenantId: string, model: string, query: string, totalChunks: number): Promise<QueryTerm[]> {
    const r = await this.pool.query<{ lexeme: string; q: string; df: number }>(
      // `offset 0` keeps the lateral subquery apart: one primary-key probe per query term, whatever
      // the planner's statistics say (a fresh table has none and would be joined in full).
      `select t.lexeme, '''' || replace(replace(t.lexeme, '\\', '\\\\'), '''', '''''') || '''' as q, s.chunk_count as df
       from unnest(${QUERY_TSVECTOR}) t
       cross join lateral (select k.chunk_count from kb_term_stats k
                           where k.tenant_id = $2 and k.embedding_model = $3 and k.lexeme = t.lexeme offset 0) s
       -- English stop words carry no meaning to match on; in a small knowledge base they are rare
       -- enough to look significant. The chunks keep them, so switching this needs no reindex.
       where s.chunk_count > 0 and to_tsvector('english'::regconfig, t.lexeme) <> ''::tsvector`,
      [query, tenantId, model],
    );
    return r.rows.map((t) => ({ lexeme: t.lexeme, tsquery: t.q, df: t.df, weight: termWeight(totalChunks, t.df) }));
  }

  private async vectorCandidates(
    params: KbSearchParams,
    dims: number,
    indexed: CachedDocumentRef[],
    searchIn: ReadonlySet<string> | null,
    docIds: string[],
    query: Float32Array,
    limit: number,
  ): Promise<Candidate[]> {
    const support = await this.vectorSupport();
    if (support.kind === 'fallback') {
      return this.cache.topK(this.pool, { tenantId: params.tenantId, model: params.model, dims }, indexed, searchIn, query, limit);
    }
    // set_config(…, true) lasts for the transaction: the HNSW settings apply to this query only.
    return inPgTransaction(this.pool, async (client) => {
      await client.query(`select set_config('hnsw.ef_search', $1, true)`, [String(Math.min(1000, Math.max(40, limit)))]);
      if (support.iterativeScan) await client.query(`select set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
      const r = await client.query<{ id: string; document_id: string; similarity: number }>(nearestChunksSql(params.model, dims), [
        vectorLiteral(query),
        params.tenantId,
        docIds,
        limit,
      ]);
      return r.rows.map((row) => ({ chunkId: row.id, documentId: row.document_id, similarity: Number(row.similarity) }));
    });
  }

  /** The best chunks by weighted term share among those holding at least one selective (not common) term. */
  private async textCandidates(params: KbSearchParams, docIds: string[], terms: QueryTerm[], limit: number): Promise<Candidate[]> {
    // The rarest terms, as long as the chunks holding them stay few: common words select nothing
    // useful and would make this scan as large as the tenant (they still count in the score).
    const selective: QueryTerm[] = [];
    let rows = 0;
    for (const t of [...terms].sort((a, b) => a.df - b.df)) {
      if (rows + t.df > TEXT_SCAN_ROWS) break;
      selective.push(t);
      rows += t.df;
    }
    if (selective.length === 0) return [];
    const r = await this.pool.query<{ id: string; document_id: string }>(
      `select c.id, c.document_id from kb_chunks c ${TERM_WEIGHT_JOIN}
       where c.tenant_id = $1 and c.embedding_model = $2 and c.document_id = any($3::text[]) and c.search_vector @@ $4::tsquery
       order by tw.weight desc, c.id
       limit $7`,
      [params.tenantId, params.model, docIds, selective.map((t) => t.tsquery).join(' | '), terms.map((t) => t.lexeme), terms.map((t) => t.weight), limit],
    );
    return r.rows.map((row) => ({ chunkId: row.id, documentId: row.document_id, similarity: null }));
  }

  /** The candidates' rows with their text-term weight and cosine similarity to the query. */
  private async fetchChunks(candidates: Map<string, Candidate>, terms: QueryTerm[], query: Float32Array, dims: number) {
    const withVector = (await this.vectorSupport()).kind === 'pgvector';
    // Fallback: the vector candidates' similarity is known; only text-only candidates need their vector.
    const needVector = [...candidates.values()].filter((c) => c.similarity === null).map((c) => c.chunkId);
    const r = await this.pool.query<{
      id: string;
      document_id: string;
      text: string;
      context: string | null;
      page_number: number | null;
      metadata: Record<string, string> | null;
      text_weight: number;
      similarity: number | null;
      embedding: string | null;
    }>(
      `select c.id, c.document_id, c.text, c.context, c.page_number, c.metadata,
              tw.weight as text_weight,
              ${withVector ? `1 - (c.embedding::vector(${dims}) <=> $4::vector(${dims}))` : 'null::float8'} as similarity,
              ${withVector ? 'null::text' : 'case when c.id = any($4::text[]) then c.embedding::text end'} as embedding
       from kb_chunks c ${TERM_WEIGHT_JOIN.replaceAll('$5', '$2').replaceAll('$6', '$3')} where c.id = any($1::text[])`,
      [[...candidates.keys()], terms.map((t) => t.lexeme), terms.map((t) => t.weight), withVector ? vectorLiteral(query) : needVector],
    );
    return r.rows.map((row) => ({
      ...row,
      text_weight: Number(row.text_weight),
      similarity:
        row.similarity !== null ? Number(row.similarity) : row.embedding !== null ? cosineOfText(row.embedding, query) : candidates.get(row.id)!.similarity!,
    }));
  }

  /** Registers the model's dimensions (first use) and, with pgvector, its HNSW index. */
  private async ensureModel(model: string, dims: number): Promise<void> {
    if (this.modelDims.get(model) === dims) return;
    await this.pool.query('insert into kb_embedding_models (model, dimensions) values ($1, $2) on conflict (model) do nothing', [model, dims]);
    const r = await this.pool.query<{ dimensions: number }>('select dimensions from kb_embedding_models where model = $1', [model]);
    const known = r.rows[0]?.dimensions;
    if (known !== dims) throw new KbIndexError('dimension_mismatch', `model ${model} has ${known} dimensions, got vectors of ${dims}`);
    if ((await this.vectorSupport()).kind === 'pgvector') await this.ensureHnswIndex(model, dims);
    this.modelDims.set(model, dims);
  }

  /**
   * With pgvector, gives every registered model its HNSW index; call at start-up. Needed when
   * the database gained pgvector after vectors were written, since indexes are otherwise only
   * made on a model's first write. Building over existing rows blocks chunk writes meanwhile.
   * Returns the models whose index now exists.
   */
  async ensureVectorIndexes(): Promise<string[]> {
    if ((await this.vectorSupport()).kind !== 'pgvector') return [];
    const r = await this.pool.query<{ model: string; dimensions: number }>('select model, dimensions from kb_embedding_models order by model');
    const done: string[] = [];
    for (const { model, dimensions } of r.rows) {
      if (await this.ensureHnswIndex(model, dimensions)) done.push(model);
      this.modelDims.set(model, dimensions);
    }
    return done;
  }

  /** False when the model is too wide for HNSW (pgvector: at most 2,000 dimensions); it is then searched exactly. */
  private async ensureHnswIndex(model: string, dims: number): Promise<boolean> {
    if (dims > 2000) return false;
    const name = hnswIndexName(model);
    try {
      await this.pool.query(
        `create index if not exists ${name} on kb_chunks using hnsw ((embedding::vector(${dims})) vector_cosine_ops)
         where embedding_model = ${literal(model)}`,
      );
    } catch (err) {
      // Two replicas creating it at once: the loser gets a duplicate-name error, and the index exists.
      const exists = await this.pool.query('select 1 from pg_class where relname = $1', [name]);
      if (exists.rowCount === 0) throw err;
    }
    return true;
  }

  private async registeredDims(model: string): Promise<number | null> {
    const cached = this.modelDims.get(model);
    if (cached !== undefined) return cached;
    const r = await this.pool.query<{ dimensions: number }>('select dimensions from kb_embedding_models where model = $1', [model]);
    return r.rows[0]?.dimensions ?? null;
  }
}

/**
 * pgvector's nearest chunks of one model: `$1` query vector (`[..]` text), `$2` tenant, `$3`
 * document ids, `$4` limit. The model is inlined as a literal and the expression is the
 * index's, so the planner can use the model's partial HNSW index.
 */
export function nearestChunksSql(model: string, dims: number): string {
  const vec = `c.embedding::vector(${dims})`;
  return `select id, document_id, similarity from (
            select c.id, c.document_id, 1 - (${vec} <=> $1::vector(${dims})) as similarity, ${vec} <=> $1::vector(${dims}) as distance
            from kb_chunks c
            where c.embedding_model = ${literal(model)} and c.tenant_id = $2 and c.document_id = any($3::text[])
            order by ${vec} <=> $1::vector(${dims}) limit $4) n
          order by distance`;
}

/**
 * `tw.weight`: the summed weights (`$6`) of the query terms (`$5`, lexemes) that chunk `c`
 * holds. The chunk's search vector is TOASTed and would be fetched and decompressed once per
 * term if each term were tested with `@@`; as one array it is read once per chunk.
 */
const TERM_WEIGHT_JOIN = `
  cross join lateral (select tsvector_to_array(c.search_vector) as lexemes offset 0) cl
  cross join lateral (select coalesce(sum(u.w), 0)::float8 as weight from unnest($5::text[], $6::float8[]) u(l, w) where u.l = any(cl.lexemes)) tw`;

/** Serialises term-count changes per tenant: concurrent writers would otherwise lock the same terms in opposite orders. */
async function lockTenantStats(client: pg.PoolClient, tenantId: string): Promise<void> {
  await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [TERM_STATS_LOCK_CLASS, tenantId]);
}

const TERM_STATS_LOCK_CLASS = 7_361_008;

/** $1 document, $2 tenant: takes the document's current chunks out of the term counts. */
const DECREMENT_TERM_STATS = `
  with old as (
    select c.embedding_model, u.lexeme, count(*)::int as n
    from kb_chunks c cross join lateral unnest(c.search_vector) u
    where c.document_id = $1 group by c.embedding_model, u.lexeme)
  update kb_term_stats s set chunk_count = s.chunk_count - old.n
  from old where s.tenant_id = $2 and s.embedding_model = old.embedding_model and s.lexeme = old.lexeme`;

/** $1 document, $2 tenant, $3 model: adds the document's (new) chunks to the term counts. */
const INCREMENT_TERM_STATS = `
  insert into kb_term_stats (tenant_id, embedding_model, lexeme, chunk_count)
  select $2, $3, u.lexeme, count(*)::int
  from kb_chunks c cross join lateral unnest(c.search_vector) u
  where c.document_id = $1 group by u.lexeme order by u.lexeme
  on conflict (tenant_id, embedding_model, lexeme) do update set chunk_count = kb_term_stats.chunk_count + excluded.chunk_count`;

/** A document's chunk-set version: `processed_at` in microseconds, as text. */
const VERSION_SQL = `coalesce((extract(epoch from processed_at) * 1000000)::bigint, 0)::text`;

/** The name of a model's partial HNSW index (model names can be long and hold any character). */
export function hnswIndexName(model: string): string {
  return `kb_chunks_hnsw_${createHash('sha256').update(model).digest('hex').slice(0, 16)}`;
}

function literal(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

export function vectorLiteral(v: Float32Array): string {
  return `[${Array.from(v, (x) => x.toPrecision(9)).join(',')}]`;
}

function cosineOfText(text: string, query: Float32Array): number {
  const values = text.slice(1, -1).split(',');
  let dot = 0;
  let norm = 0;
  for (let i = 0; i < values.length; i++) {
    const x = Number(values[i]);
    dot += x * query[i]!;
    norm += x * x;
  }
  return norm === 0 ? 0 : dot / Math.sqrt(norm);
}
