/**
 * Retrieval for live calls (RAG): answers `knowledge.retrieve` from gateways with the best
 * passages of the agent's documents for one caller turn. The query is embedded by the same
 * embedder that indexed the documents (so only vectors of one model are compared) and
 * searched with the hybrid index; see docs/knowledge-base.md "Retrieval in calls".
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Bus, BusSubscription, ReplyPayload, RequestPayload } from '@vap/shared';
import { cutText } from '@vap/voice-pipeline';
import { CONTROL_PLANE_QUEUE } from '../conversations/call-handlers.js';
import { createEmbedder } from './embedding/index.js';
import type { EmbeddingConfig } from './embedding/index.js';
import { KbIndex, detectVectorSupport } from './index/index.js';
import type { Embedder } from './types.js';

type RetrieveRequest = RequestPayload<'knowledgeRetrieve'>;
type RetrieveReply = ReplyPayload<'knowledgeRetrieve'>;
export type RetrievedPassage = Extract<RetrieveReply, { ok: true }>['passages'][number];

/**
 * Matches scoring below this are left out of a call's prompt: with no shared term the score
 * is the cosine similarity alone, and a passage that far from the question only costs tokens.
 */
export const RETRIEVAL_MIN_SCORE = 0.1;
/** A passage cut to fit `maxChars` keeps at least this much, or is left out. */
const MIN_PASSAGE_CHARS = 200;

export interface KnowledgeRetrievalDeps {
  pool: pg.Pool;
  index: KbIndex;
  embedder: Embedder;
  log: Logger;
  minScore?: number;
}

/** Answers one retrieval request; never throws for embedding or search failures (they become `ok: false`). */
export class KnowledgeRetrieval {
  constructor(private readonly deps: KnowledgeRetrievalDeps) {}

  async retrieve(req: RetrieveRequest): Promise<RetrieveReply> {
    const started = performance.now();
    const took = () => Math.round(performance.now() - started);
    const query = req.query.trim();
    if (query === '' || req.documentIds.length === 0) return { ok: true, passages: [], tookMs: took() };
    const documentIds = await this.assignedDocuments(req);
    if (documentIds.length === 0) return { ok: true, passages: [], tookMs: took() };

    let vector: Float32Array;
    try {
      [vector] = (await this.deps.embedder.embed([query], 'query')) as [Float32Array];
    } catch (err) {
      this.deps.log.warn({ err, tenantId: req.tenantId, conversationId: req.conversationId, model: this.deps.embedder.model }, 'knowledge retrieval: embedding the query failed');
      return { ok: false, code: 'embedding_failed', message: `embedding the query with ${this.deps.embedder.model} failed: ${(err as Error).message}` };
    }
    try {
      const result = await this.deps.index.search({
        tenantId: req.tenantId,
        query,
        queryVector: vector,
        model: this.deps.embedder.model,
        documentIds,
        topK: req.topK,
        minScore: this.deps.minScore ?? RETRIEVAL_MIN_SCORE,
      });
      const passages = boundPassages(
        result.matches.map((m) => ({ documentId: m.documentId, documentName: m.documentName, chunkId: m.chunkId, score: m.score, text: m.text, pageNumber: m.pageNumber })),
        req.maxChars,
      );
      return { ok: true, passages, tookMs: took() };
    } catch (err) {
      this.deps.log.warn({ err, tenantId: req.tenantId, conversationId: req.conversationId }, 'knowledge retrieval: search failed');
      return { ok: false, code: 'search_failed', message: `knowledge-base search failed: ${(err as Error).message}` };
    }
  }

  /** The requested documents that belong to the tenant and are assigned to the agent (`kb_document_agents`). */
  private async assignedDocuments(req: RetrieveRequest): Promise<string[]> {
    const r = await this.deps.pool.query<{ id: string }>(
      `select d.id from kb_documents d
       join kb_document_agents a on a.document_id = d.id and a.agent_id = $2 and a.tenant_id = $1
       where d.tenant_id = $1 and d.id = any($3::text[])`,
      [req.tenantId, req.agentId, req.documentIds],
    );
    return r.rows.map((row) => row.id);
  }
}

/**
 * Best first, the passages whose text adds up to at most `maxChars`: the first one that does
 * not fit is cut at a sentence or word boundary (when at least {@link MIN_PASSAGE_CHARS} of it
 * fit) and the rest are left out.
 */
export function boundPassages<P extends { text: string }>(passages: readonly P[], maxChars: number): P[] {
  const out: P[] = [];
  let left = maxChars;
  for (const p of passages) {
    if (p.text.length <= left) {
      out.push(p);
      left -= p.text.length;
      continue;
    }
    if (left >= Math.min(MIN_PASSAGE_CHARS, maxChars)) out.push({ ...p, text: cutText(p.text, left) });
    break;
  }
  return out;
}

/** Answers `knowledge.retrieve` as one member of the control planes' queue group. */
export function subscribeKnowledgeRetrieval(bus: Bus, retrieval: KnowledgeRetrieval, log: Logger): BusSubscription {
  return bus.respond(
    'knowledgeRetrieve',
    async (req) => {
      try {
        return await retrieval.retrieve(req);
      } catch (err) {
        log.error({ err, tenantId: req.tenantId, conversationId: req.conversationId }, 'knowledge.retrieve failed');
        throw err;
      }
    },
    { queue: CONTROL_PLANE_QUEUE },
  );
}

/**
 * Starts the retrieval responder of a control plane. Reuses `index` / `embedder` when given
 * (one KbIndex per process keeps one fallback vector cache); otherwise builds them from the
 * configuration (pgvector detected on the pool, `createEmbedder(embedding)`).
 */
export async function startKnowledgeRetrieval(deps: {
  bus: Bus;
  pool: pg.Pool;
  log: Logger;
  embedding: EmbeddingConfig;
  index?: KbIndex;
  embedder?: Embedder;
}): Promise<{ retrieval: KnowledgeRetrieval; close(): Promise<void> }> {
  const log = deps.log.child({ module: 'knowledge-retrieval' });
  let index = deps.index;
  if (!index) {
    const vectorSupport = await detectVectorSupport(deps.pool);
    log.info({ vectorSupport }, 'knowledge-base index for retrieval ready');
    index = new KbIndex({ pool: deps.pool, vectorSupport });
  }
  const embedder = deps.embedder ?? createEmbedder(deps.embedding);
  const retrieval = new KnowledgeRetrieval({ pool: deps.pool, index, embedder, log });
  const sub = subscribeKnowledgeRetrieval(deps.bus, retrieval, log);
  return { retrieval, close: () => sub.close() };
}
