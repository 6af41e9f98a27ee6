import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import type { Logger } from 'pino';
import { LocalObjectStore } from '@vap/shared';
import type { ClaimedJob } from '../jobs/job-queue.js';
import { enqueueJob } from '../jobs/job-queue.js';
import { PermanentJobError } from '../jobs/job-runner.js';
import type { SqlExecutor } from '../webhooks/event-outbox.js';
import { storableText } from '../../db/storable-text.js';
import { KbIndexError } from './index/index.js';
import { parseAndChunkInWorker } from './parsing/index.js';
import type { KnowledgeBase } from './runtime.js';
import { KbParseError } from './types.js';
import type { KbDocumentType } from './types.js';

/** Job kind of a document's indexing (subject: the document id; re-enqueued by reindex). */
export const KB_INDEX_JOB = 'knowledge-base.index';
/** Attempts before a document ends `failed` for a transient error (embedding endpoint down, database gone). */
export const KB_INDEX_MAX_ATTEMPTS = 4;

/** Progress milestones (0..100) reported by `GET …/status`. */
export const KB_PROGRESS = { fetched: 5, parsed: 15, chunked: 20, embedded: 95 } as const;

/** Enqueues the indexing of a document in `tx`, the transaction that set it `processing`. A finished job of the same document is replaced. */
export async function enqueueIndexing(tx: SqlExecutor, tenantId: string, documentId: string): Promise<void> {
  await tx.execute(sql`delete from jobs where kind = ${KB_INDEX_JOB} and subject_id = ${documentId} and status in ('succeeded', 'failed')`);
  const created = await enqueueJob(tx, { kind: KB_INDEX_JOB, tenantId, subjectId: documentId, maxAttempts: KB_INDEX_MAX_ATTEMPTS });
  if (!created) throw new Error(`an indexing job of ${documentId} is still pending or running`);
}

interface DocumentRow {
  id: string;
  tenant_id: string;
  storage_key: string;
  document_type: KbDocumentType;
  status: string;
}

/**
 * Indexes one document: fetch the stored file (streamed to a temporary file from S3), parse
 * and chunk it in a worker (neither runs on the event loop), embed in
 * batches with the configured embedder, and replace the document's chunks in one
 * transaction (which sets `indexed`). Progress: fetched 5, parsed 15, chunked 20, then
 * 20→95 by embedding batches, 100 when written. A parse error (corrupt, encrypted, empty,
 * timeout, too complex) ends `failed` with its message at once; other errors are retried by
 * the job queue, and the last attempt's error ends `failed`. A document deleted meanwhile is
 * left deleted: every write names the document and stops when it is gone.
 */
export class KbIndexingJob {
  private readonly pool: pg.Pool;
  private readonly kb: KnowledgeBase;
  private readonly log: Logger;
  private readonly batchSize: number;

  constructor(deps: { pool: pg.Pool; kb: KnowledgeBase; log: Logger; batchSize?: number }) {
    this.pool = deps.pool;
    this.kb = deps.kb;
    this.log = deps.log;
    this.batchSize = deps.batchSize ?? 64;
  }

  readonly handle = async (job: ClaimedJob, signal: AbortSignal): Promise<void> => {
    try {
      await this.run(job, signal);
    } catch (err) {
      if (err instanceof KbParseError) {
        await this.markFailed(job.subjectId, err.message);
        throw new PermanentJobError(`parse failed (${err.code}): ${err.message}`, { cause: err });
      }
      if (err instanceof PermanentJobError) {
        await this.markFailed(job.subjectId, err.message);
        throw err;
      }
      if (job.attempt >= job.maxAttempts && !signal.aborted) {
        const reason = err instanceof Error ? err.message : String(err);
        await this.markFailed(job.subjectId, `Indexing failed after ${job.attempt} attempts: ${reason}`);
      }
      throw err;
    }
  };

  private async run(job: ClaimedJob, signal: AbortSignal): Promise<void> {
    const id = job.subjectId;
    const doc = (await this.pool.query<DocumentRow>('select id, tenant_id, storage_key, document_type, status from kb_documents where id = $1 and tenant_id = $2', [id, job.tenantId])).rows[0];
    if (!doc) return; // deleted before the job ran
    if (doc.status !== 'processing') return; // a stale job: nothing asked for this run
    if (!(await this.progress(id, 0))) return;

    const store = this.kb.store;
    let path: string;
    let temp: string | null = null;
    if (store instanceof LocalObjectStore) {
      path = store.pathOf(doc.storage_key);
      if (!(await store.exists(doc.storage_key))) return this.missingFile(id);
    } else {
      temp = join(this.kb.tempDir, `index-${randomBytes(12).toString('hex')}`);
      path = temp;
    }
    let chunks;
    try {
      if (temp && !(await store.getToFile(doc.storage_key, temp))) return this.missingFile(id);
      if (!(await this.progress(id, KB_PROGRESS.fetched))) return;
      // A document's text may hold NUL characters or unpaired surrogates (JSON escapes, a spreadsheet cell): stored and embedded as U+FFFD.
      ({ chunks } = storableText(await parseAndChunkInWorker(doc.document_type, path, { pool: this.kb.parser, signal })));
    } finally {
      if (temp) await rm(temp, { force: true });
    }
    // Parsed and chunked come back together from the worker; both milestones are kept for the status API.
    if (!(await this.progress(id, KB_PROGRESS.parsed))) return;
    if (chunks.length === 0) throw new KbParseError('empty', 'The document has no text to index.');
    if (!(await this.progress(id, KB_PROGRESS.chunked))) return;

    const embedder = this.kb.embedder;
    const vectors: Float32Array[] = [];
    for (let start = 0; start < chunks.length; start += this.batchSize) {
      signal.throwIfAborted();
      const batch = chunks.slice(start, start + this.batchSize);
      const texts = batch.map((c) => (c.context ? `${c.context}\n${c.text}` : c.text));
      vectors.push(...(await embedder.embed(texts, 'document')));
      const done = start + batch.length;
      const pct = KB_PROGRESS.chunked + Math.floor(((KB_PROGRESS.embedded - KB_PROGRESS.chunked) * done) / chunks.length);
      if (!(await this.progress(id, pct))) return;
    }
    signal.throwIfAborted();
    try {
      await this.kb.index.replaceDocumentChunks(id, embedder.model, chunks, vectors);
    } catch (err) {
      if (err instanceof KbIndexError && err.code === 'document_not_found') return;
      if (err instanceof KbIndexError) throw new PermanentJobError(`The vectors could not be indexed: ${err.message}`, { cause: err });
      throw err;
    }
    this.log.info({ documentId: id, chunks: chunks.length, model: embedder.model }, 'knowledge-base document indexed');
  }

  /** Sets progress (a retry starts again at 0); false when the document is gone or no longer processing. */
  private async progress(id: string, pct: number): Promise<boolean> {
    const res = await this.pool.query(`update kb_documents set progress = $2, updated_at = now() where id = $1 and status = 'processing'`, [id, pct]);
    return (res.rowCount ?? 0) > 0;
  }

  private async missingFile(id: string): Promise<void> {
    const exists = await this.pool.query('select 1 from kb_documents where id = $1', [id]);
    if (exists.rowCount === 0) return; // deleted with its file meanwhile
    throw new PermanentJobError('The stored file of this document is missing; upload it again.');
  }

  private async markFailed(id: string, message: string): Promise<void> {
    await this.pool.query(`update kb_documents set status = 'failed', error = $2, updated_at = now() where id = $1 and status = 'processing'`, [id, message.slice(0, 2000)]);
  }
}
