import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { AppError, SUBJECTS, isId, newId } from '@vap/shared';
import type { Bus } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { unstorableTextReason } from '../../db/storable-text.js';
import type { KbDocumentStatus } from '../../db/schema/knowledge-base.js';
import { offsetOf, toPage } from '../../http/pagination.js';
import type { Principal } from '../auth/principal.js';
import { assignDocumentToAgents, removeDocumentFromAgents } from './assignments.js';
import { EmbeddingError } from './embedding/index.js';
import { KB_INDEX_JOB, enqueueIndexing } from './indexing-job.js';
import { KbIndexError } from './index/index.js';
import { detectDocumentType } from './parsing/index.js';
import { alreadyProcessing, documentNotFound, invalidField, unsupportedFile } from './problems.js';
import type { KnowledgeBase } from './runtime.js';
import type { ListDocumentsQuery, SearchBody } from './schemas.js';
import { safeFilename } from './upload.js';
import type { ReceivedUpload } from './upload.js';

export interface DocumentView {
  id: string;
  name: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  status: KbDocumentStatus;
  progress: number;
  chunkCount: number;
  embeddingModel: string | null;
  assignedAgentIds: string[];
  uploadedAt: string;
  indexedAt: string | null;
  metadata: Record<string, string>;
  error: string | null;
}

type DocumentRow = {
  id: string;
  name: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  status: KbDocumentStatus;
  progress: number;
  chunk_count: number;
  embedding_model: string | null;
  agent_ids: string[] | null;
  uploaded_at: Date;
  processed_at: Date | null;
  metadata: Record<string, string> | null;
  error: string | null;
  job_status: string | null;
  job_error: string | null;
};

const MAX_NAME = 255;
const MAX_AGENT_IDS = 50;
const MAX_METADATA_KEYS = 50;

/**
 * The document as the API shows it. A document still `processing` whose job has ended
 * `failed` (its worker died on the last attempt, so the job never recorded the outcome on
 * the document) reads as `failed` with the job's error, so no document stays processing forever.
 */
function view(r: DocumentRow): DocumentView {
  const stuck = r.status === 'processing' && r.job_status === 'failed';
  return {
    id: r.id,
    name: r.name,
    filename: r.filename,
    mimeType: r.mime_type,
    sizeBytes: r.size_bytes,
    status: stuck ? 'failed' : r.status,
    progress: r.progress,
    chunkCount: r.chunk_count,
    embeddingModel: r.embedding_model,
    assignedAgentIds: r.agent_ids ?? [],
    uploadedAt: r.uploaded_at.toISOString(),
    indexedAt: r.processed_at ? r.processed_at.toISOString() : null,
    metadata: r.metadata ?? {},
    error: stuck ? `Indexing stopped: ${r.job_error ?? 'the job failed'}` : r.error,
  };
}

const SELECT_DOCUMENT = sql`
  select d.id, d.name, d.filename, d.mime_type, d.size_bytes, d.status, d.progress, d.chunk_count, d.embedding_model,
         d.uploaded_at, d.processed_at, d.metadata, d.error,
         (select array_agg(a.agent_id order by a.agent_id) from kb_document_agents a where a.document_id = d.id) as agent_ids,
         j.status as job_status, j.last_error as job_error
    from kb_documents d
    left join jobs j on j.kind = ${KB_INDEX_JOB} and j.subject_id = d.id`;

/**
 * Knowledge-base documents: upload, list, get, status, reindex, delete, and search. Every
 * method acts inside the principal's tenant; another tenant's document is a 404.
 */
export class KnowledgeBaseService {
  private readonly db: Db;
  private readonly kb: KnowledgeBase;
  private readonly bus: Bus;
  private readonly log: Logger;

  constructor(deps: { db: Db; kb: KnowledgeBase; bus: Bus; log: Logger }) {
    this.db = deps.db;
    this.kb = deps.kb;
    this.bus = deps.bus;
    this.log = deps.log;
  }

  /**
   * Checks and stores a received upload, then in one transaction inserts the document
   * (`processing`, progress 0), assigns it to `agentIds` and enqueues its indexing. The
   * temporary file is always removed; the stored file is removed again when the insert fails.
   */
  async upload(p: Principal, up: ReceivedUpload): Promise<{ id: string; name: string; filename: string; status: 'processing'; uploadedAt: string }> {
    try {
      const detected = await detectDocumentType({ head: up.head, filename: up.filename, declaredMime: up.declaredMime });
      if (!detected.ok) {
        if (detected.status === 415) throw unsupportedFile(detected.reason);
        throw invalidField('file', detected.reason);
      }
      const name = parseName(up.fields.name, up.filename);
      const agentIds = parseAgentIds(up.fields.agentIds);
      const metadata = parseMetadata(up.fields.metadata);
      const id = newId('kb');
      const storageKey = `knowledge-base/${p.tenantId}/${id}/${safeFilename(up.filename)}`;
      // Streamed from the temporary file into the store: the upload is never in memory whole.
      await this.kb.store.putFile(storageKey, up.tempPath, detected.mimeType);
      let uploadedAt: Date;
      let changedAgents: string[];
      try {
        ({ uploadedAt, changedAgents } = await this.db.transaction(async (tx) => {
          const inserted = await tx.execute<{ uploaded_at: Date }>(sql`
            insert into kb_documents (id, tenant_id, name, filename, mime_type, document_type, size_bytes, storage_key, metadata, status, progress)
            values (${id}, ${p.tenantId}, ${name}, ${up.filename}, ${detected.mimeType}, ${detected.type}, ${up.sizeBytes}, ${storageKey}, ${JSON.stringify(metadata)}::jsonb, 'processing', 0)
            returning uploaded_at`);
          const agents = await assignDocumentToAgents(tx, p.tenantId, id, agentIds);
          await enqueueIndexing(tx, p.tenantId, id);
          return { uploadedAt: new Date(inserted.rows[0]!.uploaded_at), changedAgents: agents };
        }));
      } catch (err) {
        await this.kb.store.delete(storageKey).catch((e: unknown) => this.log.warn({ err: e, storageKey }, 'stored upload not removed after a failed insert'));
        throw err;
      }
      await this.announceAgents(p.tenantId, changedAgents);
      return { id, name, filename: up.filename, status: 'processing', uploadedAt: uploadedAt.toISOString() };
    } finally {
      await up.discard();
    }
  }

  async list(p: Principal, q: ListDocumentsQuery) {
    const where = [sql`d.tenant_id = ${p.tenantId}`];
    if (q.status) where.push(sql`d.status = ${q.status}`);
    if (q.agentId) where.push(sql`exists (select 1 from kb_document_agents a where a.document_id = d.id and a.agent_id = ${q.agentId})`);
    if (q.search) where.push(sql`d.name ilike ${`%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`);
    const cond = sql.join(where, sql` and `);
    const dir = q.sortOrder === 'asc' ? sql`asc` : sql`desc`;
    const order = q.sortBy === 'name' ? sql`d.name ${dir}, d.id ${dir}` : sql`d.uploaded_at ${dir}, d.id ${dir}`;
    const [rows, total] = await Promise.all([
      this.db.execute<DocumentRow>(sql`${SELECT_DOCUMENT} where ${cond} order by ${order} limit ${q.pageSize} offset ${offsetOf(q)}`),
      this.db.execute<{ n: string }>(sql`select count(*) as n from kb_documents d where ${cond}`),
    ]);
    return toPage(rows.rows.map(fixDates).map(view), Number(total.rows[0]?.n ?? 0), q);
  }

  async get(p: Principal, id: string): Promise<DocumentView> {
    const res = await this.db.execute<DocumentRow>(sql`${SELECT_DOCUMENT} where d.tenant_id = ${p.tenantId} and d.id = ${id}`);
    const row = res.rows[0];
    if (!row) throw documentNotFound(id);
    return view(fixDates(row));
  }

  async status(p: Principal, id: string) {
    const d = await this.get(p, id);
    return { id: d.id, status: d.status, progress: d.progress, chunkCount: d.chunkCount, indexedAt: d.indexedAt, error: d.error };
  }

  /**
   * Back to `processing` (progress 0, error cleared) with a new indexing job; the current
   * chunks stay until the new ones replace them, but the document is out of search meanwhile.
   * 409 while its job is pending or running; a `processing` document whose job has ended was stuck, and may restart.
   */
  async reindex(p: Principal, id: string) {
    await this.db.transaction(async (tx) => {
      const res = await tx.execute<{ status: KbDocumentStatus; job_status: string | null }>(sql`
        select d.status, j.status as job_status from kb_documents d
          left join jobs j on j.kind = ${KB_INDEX_JOB} and j.subject_id = d.id
         where d.tenant_id = ${p.tenantId} and d.id = ${id} for update of d`);
      const row = res.rows[0];
      if (!row) throw documentNotFound(id);
      // Its job still pending or running (also just after it set the document failed, before the queue recorded the outcome).
      if (row.job_status === 'pending' || row.job_status === 'running') throw alreadyProcessing(id);
      await tx.execute(sql`update kb_documents set status = 'processing', progress = 0, error = null, updated_at = now() where id = ${id}`);
      await enqueueIndexing(tx, p.tenantId, id);
    });
    return this.status(p, id);
  }

  /** Deletes the document, its chunks and vectors, its assignments (both sides) and its stored file. */
  async delete(p: Principal, id: string): Promise<void> {
    const found = await this.db.execute<{ storage_key: string }>(sql`select storage_key from kb_documents where tenant_id = ${p.tenantId} and id = ${id}`);
    const row = found.rows[0];
    if (!row) throw documentNotFound(id);
    if (!(await this.kb.index.deleteDocument(p.tenantId, id))) throw documentNotFound(id);
    const changed = await removeDocumentFromAgents(this.db, p.tenantId, id);
    await this.kb.store.delete(row.storage_key);
    await this.announceAgents(p.tenantId, changed);
  }

  /** Hybrid search over the tenant's indexed documents embedded by the configured model (vectors of other models are never compared). */
  async search(p: Principal, body: SearchBody) {
    if (body.documentIds && body.documentIds.length > 0) {
      const ids = [...new Set(body.documentIds)];
      const res = await this.db.execute<{ id: string }>(sql`select id from kb_documents where tenant_id = ${p.tenantId} and id = any(${sql.param(ids)}::text[])`);
      const known = new Set(res.rows.map((r) => r.id));
      const missing = ids.filter((d) => !known.has(d));
      if (missing.length > 0) throw invalidField('documentIds', `${missing.length === 1 ? 'is not a document' : 'are not documents'} of this account: ${missing.join(', ')}`);
    }
    const embedder = this.kb.embedder;
    let queryVector: Float32Array;
    try {
      [queryVector] = (await embedder.embed([body.query], 'query')) as [Float32Array];
    } catch (err) {
      if (err instanceof EmbeddingError) throw new AppError('unavailable', `The embedding model ${embedder.model} did not answer; retry later.`, { cause: err });
      throw err;
    }
    try {
      const result = await this.kb.index.search({
        tenantId: p.tenantId,
        query: body.query,
        queryVector,
        model: embedder.model,
        ...(body.documentIds ? { documentIds: body.documentIds } : {}),
        topK: body.topK,
        minScore: body.minScore,
      });
      return {
        query: body.query,
        matches: result.matches.map((m) => ({
          documentId: m.documentId,
          documentName: m.documentName,
          chunkId: m.chunkId,
          score: m.score,
          excerpt: m.excerpt,
          pageNumber: m.pageNumber,
          metadata: m.metadata,
        })),
        totalMatches: result.totalMatches,
      };
    } catch (err) {
      if (err instanceof KbIndexError && err.code === 'dimension_mismatch') throw new AppError('unavailable', `The embedding model ${embedder.model} answered vectors of another size than the indexed ones; reindex the documents.`, { cause: err });
      throw err;
    }
  }

  /** Agents whose `knowledgeBaseIds` changed: tell live-call caches as an agent update does. */
  private async announceAgents(tenantId: string, agentIds: string[]): Promise<void> {
    for (const agentId of agentIds) {
      const res = await this.db.execute<{ version: number }>(sql`select version from agents where id = ${agentId}`);
      const version = res.rows[0]?.version;
      if (version === undefined) continue;
      await this.bus
        .publish('agentChanged', SUBJECTS.agentChanged.subject(tenantId, agentId), { tenantId, agentId, version, change: 'updated', at: new Date().toISOString() })
        .catch((err: unknown) => this.log.warn({ err, agentId }, 'agentChanged not published'));
    }
  }
}

/** `db.execute` returns timestamps as strings. */
function fixDates(r: DocumentRow): DocumentRow {
  return { ...r, uploaded_at: new Date(r.uploaded_at), processed_at: r.processed_at ? new Date(r.processed_at) : null, size_bytes: Number(r.size_bytes) };
}

function parseName(raw: string | undefined, filename: string): string {
  const name = (raw ?? '').trim() || filename.trim() || 'Untitled';
  if (name.length > MAX_NAME) throw invalidField('name', `must be at most ${MAX_NAME} characters`);
  return name;
}

function parseAgentIds(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const ids = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))];
  const bad = ids.filter((id) => !isId('agt', id));
  if (bad.length > 0) throw invalidField('agentIds', `must be a comma-separated list of agent ids (agt_…); not ids: ${bad.join(', ')}`);
  if (ids.length > MAX_AGENT_IDS) throw invalidField('agentIds', `must list at most ${MAX_AGENT_IDS} agents`);
  return ids;
}

function parseMetadata(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw invalidField('metadata', 'must be a JSON object of string values, e.g. {"department":"sales"}; it is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidField('metadata', 'must be a JSON object of string values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_METADATA_KEYS) throw invalidField('metadata', `must have at most ${MAX_METADATA_KEYS} keys`);
  for (const [k, v] of entries) {
    if (typeof v !== 'string') throw invalidField('metadata', `must map keys to strings; "${k}" is a ${v === null ? 'null' : typeof v}`);
    if (k.length > 100 || v.length > 1000) throw invalidField('metadata', 'keys must be at most 100 and values 1000 characters');
    const bad = unstorableTextReason(k) ?? unstorableTextReason(v);
    if (bad !== null) throw invalidField('metadata', `keys and values ${bad}`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}
