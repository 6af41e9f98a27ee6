/**
 * The knowledge-base REST API and its indexing job, over real HTTP on a database of its own
 * (the job runner claims any tenant's indexing jobs): upload of the nine types to `indexed`,
 * progress, limits and bad files, reindex, delete, assignments both ways, search, tenancy, scopes.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, LocalObjectStore, newId } from '@vap/shared';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { JobRunner } from '../../src/modules/jobs/job-runner.js';
import { LocalEmbedder, OpenAiCompatibleEmbedder } from '../../src/modules/knowledge-base/embedding/index.js';
import { KB_INDEX_JOB, KbIndexingJob } from '../../src/modules/knowledge-base/indexing-job.js';
import { createKnowledgeBase } from '../../src/modules/knowledge-base/runtime.js';
import type { KnowledgeBase } from '../../src/modules/knowledge-base/runtime.js';
import type { Embedder } from '../../src/modules/knowledge-base/types.js';
import { KB_MAX_FILE_BYTES } from '../../src/modules/knowledge-base/upload.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, agentBody, createTenant, isolatedDatabase, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { makeDocx, makePdf, makeXlsx } from './fixtures/parsing-files.js';

/** The local embedder, slowed per batch (so progress can be watched), and able to fail or wait on demand. */
class ControlledEmbedder implements Embedder {
  private readonly inner = new LocalEmbedder();
  readonly model = this.inner.model;
  readonly dimensions = this.inner.dimensions;
  delayMs = 40;
  /** Document embeddings throw while this is above 0 (each call uses one). */
  failures = 0;
  /** Document embeddings wait for this when set. */
  gate: Promise<void> | null = null;
  onDocumentBatch: (() => void) | null = null;
  documentCalls = 0;

  async embed(texts: string[], kind: 'document' | 'query'): Promise<Float32Array[]> {
    if (kind === 'document') {
      this.documentCalls++;
      this.onDocumentBatch?.();
      if (this.failures > 0) {
        this.failures--;
        throw new Error('embedding endpoint down (connect ECONNREFUSED)');
      }
      if (this.gate) await this.gate;
      await new Promise((r) => setTimeout(r, this.delayMs));
    }
    return this.inner.embed(texts, kind);
  }
}

const log = pino({ level: 'silent' });
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let database: Database;
let app: FastifyInstance;
let base: string;
let kb: KnowledgeBase;
let store: LocalObjectStore;
let embedder: ControlledEmbedder;
let runner: JobRunner | null = null;
let dataDir: string;
let A: TestTenant;
let B: TestTenant;

function startRunner(): JobRunner {
  const r = new JobRunner({ pool: database.pool, log, concurrency: 2, pollIntervalMs: 200, retryDelaysMs: [100] });
  r.register(KB_INDEX_JOB, new KbIndexingJob({ pool: database.pool, kb, log, batchSize: 2 }).handle);
  return r;
}

beforeAll(async () => {
  iso = await isolatedDatabase();
  database = iso.database;
  dataDir = mkdtempSync(path.join(tmpdir(), 'kb-api-'));
  const config = testConfig({ DATABASE_URL: iso.url, DATA_DIR: dataDir });
  store = new LocalObjectStore(path.join(dataDir, 'store'));
  embedder = new ControlledEmbedder();
  kb = await createKnowledgeBase({ pool: database.pool, store, embedding: config.knowledgeBase.embedding, dataDir, embedder });
  app = await buildApp(config, { database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger: log, recordings: store, knowledgeBase: kb });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  runner = startRunner();
  await runner.start();
  A = await createTenant(database);
  B = await createTenant(database);
}, 60_000);

afterAll(async () => {
  await runner?.stop();
  await app?.close();
  await kb?.close();
  await iso?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A parsed response body (as `inject().json()` gives in the other tests). */
type Json = ReturnType<typeof JSON.parse>;

async function api(key: string, method: string, url: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${base}/api/v1${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {} };
}

async function upload(key: string, file: { name: string; data: Uint8Array | string; type?: string }, fields: Record<string, string> = {}, fieldsAfter = false, headers: Record<string, string> = {}) {
  const fd = new FormData();
  if (!fieldsAfter) for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', new Blob([file.data], { type: file.type ?? '' }), file.name);
  if (fieldsAfter) for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  const res = await fetch(`${base}/api/v1/knowledge-base/documents`, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body: fd });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, headers: res.headers };
}

/** Polls the status until it leaves `processing`; returns the last status and every progress value seen. */
async function settle(key: string, id: string, timeoutMs = 60_000): Promise<{ status: Json; progress: number[] }> {
  const seen: number[] = [];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(key, 'GET', `/knowledge-base/documents/${id}/status`);
    expect(res.status).toBe(200);
    seen.push(res.json.progress as number);
    if (res.json.status !== 'processing') return { status: res.json, progress: seen };
    if (Date.now() > until) throw new Error(`document ${id} still processing: ${JSON.stringify(res.json)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Files in the store under the tenant's knowledge-base prefix. */
function storedFiles(tenantId: string): number {
  const dir = path.join(dataDir, 'store', 'knowledge-base', tenantId);
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}

async function chunkCount(id: string): Promise<number> {
  const r = await database.pool.query<{ n: string }>('select count(*) as n from kb_chunks where document_id = $1', [id]);
  return Number(r.rows[0]!.n);
}

async function createAgent(key: string, overrides: Record<string, unknown> = {}) {
  const res = await api(key, 'POST', '/agents', agentBody(overrides));
  expect(res.status).toBe(201);
  return res.json;
}

const PARAGRAPHS = Array.from({ length: 200 }, (_, i) => `Section ${i + 1}. The warehouse keeps spare parts for model line ${i + 1} on shelf ${i * 3} in aisle ${i % 7}, checked every quarter by the night crew.`).join('\n\n');

describe('upload and indexing', () => {
  const ids: Record<string, string> = {};

  it('indexes all nine types, answering 202 with the document, progress rising to 100', async () => {
    const files = [
      { name: 'guide.pdf', data: await makePdf([['Harbour Bistro guide', 'Dogs are welcome on the terrace.'], ['Page two: gift cards never expire.']]), type: 'application/pdf' },
      { name: 'handbook.docx', data: await makeDocx() },
      { name: 'prices.xlsx', data: await makeXlsx() },
      { name: 'stock.csv', data: 'part,shelf\nValve V-9912,14\nGasket G-1180,15\n', type: 'text/csv' },
      { name: 'hours.md', data: '# Opening hours\n\nWe are open from 9 am to 5 pm on weekdays and closed on Sundays.\n', type: 'text/markdown' },
      { name: 'page.html', data: '<html><head><style>p{color:red}</style><script>var x = "hidden";</script></head><body><h1>Parking</h1><p>Free parking behind the building.</p></body></html>', type: 'text/html' },
      { name: 'menu.json', data: JSON.stringify({ menu: { soup: 'Fish soup with saffron', dessert: 'Apple cake' } }), type: 'application/json' },
      { name: 'feed.xml', data: '<?xml version="1.0"?><catalog><item code="QZ-7731">Industrial blender, 2 litres</item></catalog>', type: 'application/xml' },
      { name: 'manual.txt', data: `Error code XK-4471 means the intake filter is blocked; clean it and restart.\n\n${PARAGRAPHS}`, type: 'text/plain' },
    ];
    const uploaded = await Promise.all(files.map((f, i) => upload(A.key, f, { metadata: JSON.stringify({ source: f.name }) }, i % 2 === 1)));
    for (const [i, res] of uploaded.entries()) {
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      expect(res.json).toMatchObject({ name: files[i]!.name, filename: files[i]!.name, status: 'processing' });
      expect(res.json.id).toMatch(/^kb_/);
      expect(new Date(res.json.uploadedAt as string).getTime()).toBeGreaterThan(Date.now() - 60_000);
      ids[files[i]!.name] = res.json.id as string;
    }
    const mimes: Record<string, string> = {
      'guide.pdf': 'application/pdf',
      'handbook.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'prices.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'stock.csv': 'text/csv',
      'hours.md': 'text/markdown',
      'page.html': 'text/html',
      'menu.json': 'application/json',
      'feed.xml': 'application/xml',
      'manual.txt': 'text/plain',
    };
    for (const f of files) {
      const id = ids[f.name]!;
      const { status, progress } = await settle(A.key, id);
      expect(status, f.name).toMatchObject({ id, status: 'indexed', progress: 100, error: null });
      expect(status.chunkCount).toBeGreaterThan(0);
      expect(status.chunkCount).toBe(await chunkCount(id));
      for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThanOrEqual(progress[i - 1]!);
      const doc = await api(A.key, 'GET', `/knowledge-base/documents/${id}`);
      expect(doc.json).toMatchObject({
        id,
        name: f.name,
        filename: f.name,
        mimeType: mimes[f.name],
        sizeBytes: typeof f.data === 'string' ? Buffer.byteLength(f.data) : f.data.length,
        status: 'indexed',
        embeddingModel: embedder.model,
        assignedAgentIds: [],
        metadata: { source: f.name },
      });
      expect(Date.parse(doc.json.indexedAt as string)).toBeGreaterThanOrEqual(Date.parse(doc.json.uploadedAt as string));
    }
    // The long text document took several embedding batches: progress between 20 and 95 was seen.
    const again = await api(A.key, 'POST', `/knowledge-base/documents/${ids['manual.txt']}/reindex`);
    expect(again.status).toBe(202);
    expect(again.json).toMatchObject({ status: 'processing', progress: 0 });
    const { progress } = await settle(A.key, ids['manual.txt']!);
    expect(progress.some((p) => p > 20 && p < 95), `progress seen: ${progress.join(',')}`).toBe(true);
    expect(progress.at(-1)).toBe(100);
  }, 120_000);

  it('lists documents with the platform page shape, filters and sorting', async () => {
    const all = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=4&sortBy=name&sortOrder=asc');
    expect(all.status).toBe(200);
    expect(all.json.total).toBeGreaterThanOrEqual(9);
    expect(all.json.pageSize).toBe(4);
    expect(all.json.data).toHaveLength(4);
    const names = (all.json.data as Json[]).map((d) => d.name as string);
    expect(names).toEqual([...names].sort());
    const page3 = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=4&page=3&sortBy=name&sortOrder=asc');
    expect(page3.json.page).toBe(3);
    const search = await api(A.key, 'GET', '/knowledge-base/documents?search=HOURS');
    expect((search.json.data as Json[]).map((d) => d.name)).toEqual(['hours.md']);
    const bad = await api(A.key, 'GET', '/knowledge-base/documents?status=done');
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0].field).toBe('status');
  });

  it('search finds a paraphrase and an exact code, with document name, excerpt, page and metadata', async () => {
    const para = await api(A.key, 'POST', '/knowledge-base/search', { query: 'What time do you open?' });
    expect(para.status).toBe(200);
    expect(para.json.query).toBe('What time do you open?');
    expect(para.json.matches[0]).toMatchObject({ documentId: ids['hours.md'], documentName: 'hours.md', metadata: { source: 'hours.md' }, pageNumber: null });
    expect(para.json.matches[0].excerpt).toContain('9 am to 5 pm');
    expect(para.json.totalMatches).toBeGreaterThanOrEqual(para.json.matches.length);

    const code = await api(A.key, 'POST', '/knowledge-base/search', { query: 'xk4471', topK: 3 });
    expect(code.json.matches[0].documentId).toBe(ids['manual.txt']);
    expect(code.json.matches[0].excerpt).toContain('XK-4471');
    expect(code.json.matches.length).toBeLessThanOrEqual(3);

    const pdf = await api(A.key, 'POST', '/knowledge-base/search', { query: 'gift cards expire', documentIds: [ids['guide.pdf']] });
    expect(pdf.json.matches[0]).toMatchObject({ documentId: ids['guide.pdf'], pageNumber: 2 });
    expect((pdf.json.matches as Json[]).every((m) => m.documentId === ids['guide.pdf'])).toBe(true);

    const strict = await api(A.key, 'POST', '/knowledge-base/search', { query: 'What time do you open?', minScore: 0.99 });
    expect((strict.json.matches as Json[]).every((m) => (m.score as number) >= 0.99)).toBe(true);
    expect(strict.json.matches.length).toBeLessThan(para.json.matches.length);
  });

  it('search refuses bad input with a problem naming the field', async () => {
    for (const [body, field] of [
      [{ query: '' }, 'query'],
      [{ query: 'x', topK: 51 }, 'topK'],
      [{ query: 'x', topK: 0 }, 'topK'],
      [{ query: 'x', minScore: 1.5 }, 'minScore'],
      [{ query: 'x', documentIds: ['nope'] }, 'documentIds.0'],
    ] as const) {
      const res = await api(A.key, 'POST', '/knowledge-base/search', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect((res.json.errors as Json[]).map((e) => e.field)).toContain(field);
    }
    const missing = await api(A.key, 'POST', '/knowledge-base/search', {});
    expect([400, 422]).toContain(missing.status);
  });

  it('refuses a .pdf that is not a PDF (422), an image (415), bad agentIds and metadata (422), and stores nothing', async () => {
    const before = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    const notPdf = await upload(A.key, { name: 'report.pdf', data: 'just some text, not a PDF', type: 'application/pdf' });
    expect(notPdf.status).toBe(422);
    expect(notPdf.json.errors[0].field).toBe('file');
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89]);
    const image = await upload(A.key, { name: 'photo.png', data: png, type: 'image/png' });
    expect(image.status).toBe(415);
    expect(image.json.errors[0].field).toBe('file');
    for (const [fields, field] of [
      [{ agentIds: newId('agt') }, 'agentIds'],
      [{ agentIds: 'hello, world' }, 'agentIds'],
      [{ metadata: '{"team": 5}' }, 'metadata'],
      [{ metadata: 'not json' }, 'metadata'],
      [{ metadata: '["a"]' }, 'metadata'],
    ] as const) {
      const res = await upload(A.key, { name: 'a.txt', data: 'Hello there.', type: 'text/plain' }, fields);
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(res.json.errors[0].field).toBe(field);
    }
    // Another tenant's agent is not an agent of this account.
    const bAgent = await createAgent(B.key);
    const cross = await upload(A.key, { name: 'a.txt', data: 'Hello there.' }, { agentIds: bAgent.id as string });
    expect(cross.status).toBe(422);
    expect(cross.json.errors[0].field).toBe('agentIds');
    const noFile = await fetch(`${base}/api/v1/knowledge-base/documents`, { method: 'POST', headers: { authorization: `Bearer ${A.key}` }, body: (() => { const fd = new FormData(); fd.append('name', 'x'); return fd; })() });
    expect(noFile.status).toBe(400);
    const json = await api(A.key, 'POST', '/knowledge-base/documents', { file: 'x' });
    expect(json.status).toBe(415);

    const after = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    expect(after.json.total).toBe(before.json.total);
    expect(storedFiles(A.tenantId)).toBe(before.json.total);
    expect(readdirSync(kb.tempDir)).toEqual([]);
  });

  /** Streams a multipart upload of `size` bytes of text without building it in memory; resolves with the answer and how much was sent. */
  function streamUpload(key: string, size: number): Promise<{ status: number; body: string; sent: number }> {
    const boundary = `----kbtest${Date.now()}`;
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    const url = new URL(`${base}/api/v1/knowledge-base/documents`);
    let sent = 0;
    let answered = false;
    let answer: { status: number; body: string } | null = null;
    let closed = false;
    return new Promise((resolve, reject) => {
      const finish = () => {
        if (answer && closed) resolve({ ...answer, sent });
      };
      const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } }, (r) => {
        answered = true;
        let body = '';
        r.on('data', (d: Buffer) => (body += d.toString()));
        r.on('end', () => {
          answer = { status: r.statusCode ?? 0, body };
          finish();
        });
      });
      // The client keeps writing whatever the answer: only the server can stop the upload.
      req.on('close', () => {
        closed = true;
        finish();
      });
      req.on('error', (err) => {
        // The server closes the connection after its answer: later writes may fail.
        if (!answered) reject(err);
      });
      // Written chunk by chunk as the socket drains: the body never exists in memory.
      const write = () => {
        if (sent === 0) req.write(head);
        while (sent < size && !req.destroyed) {
          const n = Math.min(chunk.length, size - sent);
          sent += n;
          if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
            req.once('drain', write);
            return;
          }
        }
        req.end(tail);
      };
      write();
    });
  }

  it('answers 413 to a streamed upload of 50 MB + 1 byte, keeping nothing; a larger stream is not read to its end', async () => {
    const before = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    const res = await streamUpload(A.key, KB_MAX_FILE_BYTES + 1);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ status: 413, errors: [{ field: 'file' }] });
    const huge = await streamUpload(A.key, 500 * 1024 * 1024);
    expect(huge.status).toBe(413);
    // The server stopped reading soon after the limit and closed the connection (socket buffers hold a few MB at most).
    expect(huge.sent).toBeLessThan(KB_MAX_FILE_BYTES + 32 * 1024 * 1024);
    const after = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    expect(after.json.total).toBe(before.json.total);
    expect(storedFiles(A.tenantId)).toBe(before.json.total);
    expect(readdirSync(kb.tempDir)).toEqual([]);
  }, 60_000);

  it('an upload repeated with its Idempotency-Key answers the first document without storing another', async () => {
    const before = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    const headers = { 'idempotency-key': `kb-upload-${Date.now()}` };
    const first = await upload(A.key, { name: 'once.txt', data: 'Uploaded once, retried by a nervous client.' }, {}, false, headers);
    expect(first.status).toBe(202);
    const again = await upload(A.key, { name: 'once.txt', data: 'Uploaded once, retried by a nervous client.' }, {}, false, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.id).toBe(first.json.id);
    const after = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    expect(after.json.total).toBe(before.json.total + 1);
    await settle(A.key, first.json.id as string);
  });

  it('indexes a document whose text holds NUL characters (JSON escapes), each as U+FFFD; refuses a NUL in a field with a 422', async () => {
    const res = await upload(A.key, { name: 'valves.json', data: '{"note": "Valve QX-5521\\u0000 sits on shelf 9."}', type: 'application/json' });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const { status } = await settle(A.key, res.json.id as string);
    expect(status).toMatchObject({ status: 'indexed', error: null });
    const { rows } = await database.pool.query<{ text: string }>('select text from kb_chunks where document_id = $1', [res.json.id]);
    expect(rows.map((r) => r.text).join('\n')).toContain('QX-5521\ufffd sits on shelf 9.');
    const before = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    for (const fields of [{ name: 'Bad\u0000name' }, { metadata: '{"team": "a\\u0000"}' }] as Record<string, string>[]) {
      const bad = await upload(A.key, { name: 'a.txt', data: 'Hello there.', type: 'text/plain' }, fields);
      expect(bad.status, JSON.stringify(bad.json)).toBe(422);
      expect(bad.json.errors[0].message, JSON.stringify(fields)).toMatch(/NUL/);
    }
    const after = await api(A.key, 'GET', '/knowledge-base/documents?pageSize=100');
    expect(after.json.total).toBe(before.json.total);
  });

  it('a corrupt DOCX ends failed with its error, without retries', async () => {
    const docx = await makeDocx();
    const res = await upload(A.key, { name: 'broken.docx', data: docx.subarray(0, Math.floor(docx.length / 2)) });
    expect(res.status).toBe(202);
    const { status } = await settle(A.key, res.json.id as string);
    expect(status).toMatchObject({ status: 'failed', chunkCount: 0, indexedAt: null });
    expect(status.error).toMatch(/corrupt|damaged|could not be read|truncated/i);
    // The document is marked failed inside the attempt; the job row is finished just after it.
    let job: { status: string; attempts: number } | undefined;
    for (let i = 0; i < 100; i++) {
      job = (await database.pool.query<{ status: string; attempts: number }>('select status, attempts from jobs where kind = $1 and subject_id = $2', [KB_INDEX_JOB, res.json.id])).rows[0];
      if (job?.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(job).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('a transient embedding failure is retried; when every attempt fails the document ends failed with the cause', async () => {
    embedder.failures = 1;
    const once = await upload(A.key, { name: 'retry.txt', data: 'The loading dock opens at six.' });
    const ok = await settle(A.key, once.json.id as string);
    expect(ok.status.status).toBe('indexed');

    embedder.failures = 100;
    const always = await upload(A.key, { name: 'down.txt', data: 'The loading dock closes at ten.' });
    const bad = await settle(A.key, always.json.id as string);
    embedder.failures = 0;
    expect(bad.status.status).toBe('failed');
    expect(bad.status.error).toMatch(/after 4 attempts: embedding endpoint down/);
  }, 60_000);

  it('with an OpenAI-compatible embedding server that is down, the document ends failed with a clear error after the retries', async () => {
    await runner!.stop();
    const remote: KnowledgeBase = { ...kb, embedder: new OpenAiCompatibleEmbedder({ baseUrl: 'http://127.0.0.1:9', model: 'text-embedding-3-small', maxRetries: 0, timeoutMs: 2000 }) };
    const down = new JobRunner({ pool: database.pool, log, concurrency: 1, pollIntervalMs: 100, retryDelaysMs: [50] });
    down.register(KB_INDEX_JOB, new KbIndexingJob({ pool: database.pool, kb: remote, log }).handle);
    await down.start();
    try {
      const res = await upload(A.key, { name: 'remote.txt', data: 'Invoices are sent on the first of the month.' });
      const { status } = await settle(A.key, res.json.id as string);
      expect(status.status).toBe('failed');
      expect(status.error).toMatch(/^Indexing failed after 4 attempts: embedding request to http:\/\/127\.0\.0\.1:9\/v1\/embeddings failed/);
    } finally {
      await down.stop();
      runner = startRunner();
      await runner.start();
    }
  }, 60_000);

  it('reindex: 202 back to processing, 409 while processing; the job is durable across a runner restart', async () => {
    await runner!.stop();
    const res = await upload(A.key, { name: 'durable.txt', data: 'Shipping to Norway takes four days.' });
    const first = await api(A.key, 'POST', `/knowledge-base/documents/${res.json.id}/reindex`);
    expect(first.status).toBe(409);
    expect(first.json.type).toMatch(/invalid-state$/);
    await new Promise((r) => setTimeout(r, 300));
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${res.json.id}/status`)).json).toMatchObject({ status: 'processing', progress: 0 });
    runner = startRunner();
    await runner.start();
    const { status } = await settle(A.key, res.json.id as string);
    expect(status.status).toBe('indexed');
    const firstIndexedAt = status.indexedAt as string;
    const re = await api(A.key, 'POST', `/knowledge-base/documents/${res.json.id}/reindex`);
    expect(re.status).toBe(202);
    expect(re.json).toMatchObject({ id: res.json.id, status: 'processing', progress: 0 });
    const done = await settle(A.key, res.json.id as string);
    expect(done.status.status).toBe('indexed');
    expect(Date.parse(done.status.indexedAt as string)).toBeGreaterThan(Date.parse(firstIndexedAt));
  }, 60_000);
  it('a document whose job was lost on its last attempt reads failed, and reindex restarts it', async () => {
    await runner!.stop();
    const res = await upload(A.key, { name: 'orphan.txt', data: 'The ferry leaves at noon.' });
    const id = res.json.id as string;
    // What the queue does when the worker of the last attempt died: the job fails, the document is untouched.
    await database.pool.query(`update jobs set status = 'failed', attempts = max_attempts, last_error = 'worker lost during the last attempt (lease expired)', finished_at = now() where kind = $1 and subject_id = $2`, [KB_INDEX_JOB, id]);
    const stuck = await api(A.key, 'GET', `/knowledge-base/documents/${id}/status`);
    expect(stuck.json).toMatchObject({ status: 'failed', error: 'Indexing stopped: worker lost during the last attempt (lease expired)' });
    runner = startRunner();
    await runner.start();
    expect((await api(A.key, 'POST', `/knowledge-base/documents/${id}/reindex`)).status).toBe(202);
    expect((await settle(A.key, id)).status).toMatchObject({ status: 'indexed', error: null });
  }, 30_000);

  it('documents the upload as multipart/form-data in OpenAPI', async () => {
    const doc = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Json;
    const op = doc.paths['/api/v1/knowledge-base/documents'].post;
    expect(op.requestBody.content['multipart/form-data'].schema.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(op['x-required-scope']).toBe('agents:write');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['202', '413', '415', '422']));
  });
});

describe('assignments, delete and tenancy', () => {
  it('keeps assignedAgentIds and knowledgeBaseIds consistent: upload, agent create/PATCH, delete', async () => {
    const a1 = await createAgent(A.key);
    const a2 = await createAgent(A.key);
    const res = await upload(A.key, { name: 'assigned.txt', data: 'Returns are accepted within 30 days with the receipt.' }, { agentIds: `${a1.id}, ${a1.id}`, name: 'Returns policy' });
    expect(res.status).toBe(202);
    expect(res.json.name).toBe('Returns policy');
    const id = res.json.id as string;
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).json.assignedAgentIds).toEqual([a1.id]);
    expect((await api(A.key, 'GET', `/agents/${a1.id}`)).json.knowledgeBaseIds).toEqual([id]);

    const patched = await api(A.key, 'PATCH', `/agents/${a2.id}`, { knowledgeBaseIds: [id] });
    expect(patched.status).toBe(200);
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).json.assignedAgentIds).toEqual([a1.id, a2.id].sort());
    const filtered = await api(A.key, 'GET', `/knowledge-base/documents?agentId=${a2.id}`);
    expect((filtered.json.data as Json[]).map((d) => d.id)).toEqual([id]);

    expect((await api(A.key, 'PATCH', `/agents/${a1.id}`, { knowledgeBaseIds: [] })).status).toBe(200);
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).json.assignedAgentIds).toEqual([a2.id]);

    const a3 = await createAgent(A.key, { knowledgeBaseIds: [id] });
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).json.assignedAgentIds).toEqual([a2.id, a3.id].sort());

    // Unknown and other tenants' documents are refused on both create and PATCH.
    const bDoc = await upload(B.key, { name: 'b.txt', data: 'Tenant B only.' });
    for (const bad of [newId('kb'), bDoc.json.id as string]) {
      const p = await api(A.key, 'PATCH', `/agents/${a2.id}`, { knowledgeBaseIds: [id, bad] });
      expect(p.status).toBe(422);
      expect(p.json.errors[0].field).toBe('knowledgeBaseIds');
      const c = await api(A.key, 'POST', '/agents', agentBody({ knowledgeBaseIds: [bad] }));
      expect(c.status).toBe(422);
      expect(c.json.errors[0].field).toBe('knowledgeBaseIds');
    }
    expect((await api(A.key, 'GET', `/agents/${a2.id}`)).json.knowledgeBaseIds).toEqual([id]);

    await settle(A.key, id);
    const del = await api(A.key, 'DELETE', `/knowledge-base/documents/${id}`);
    expect(del.status).toBe(204);
    expect((await api(A.key, 'GET', `/agents/${a2.id}`)).json.knowledgeBaseIds).toEqual([]);
    expect((await api(A.key, 'GET', `/agents/${a3.id}`)).json.knowledgeBaseIds).toEqual([]);
    const rows = await database.pool.query('select 1 from kb_document_agents where document_id = $1', [id]);
    expect(rows.rowCount).toBe(0);
  }, 60_000);

  it('delete removes the document, chunks, vectors and stored file; search no longer finds it', async () => {
    const res = await upload(A.key, { name: 'delete-me.txt', data: 'The secret pass phrase is ZEBRA-0042 for the back door.' });
    const id = res.json.id as string;
    await settle(A.key, id);
    const found = await api(A.key, 'POST', '/knowledge-base/search', { query: 'ZEBRA-0042' });
    expect(found.json.matches[0].documentId).toBe(id);
    const key = (await database.pool.query<{ storage_key: string }>('select storage_key from kb_documents where id = $1', [id])).rows[0]!.storage_key;
    expect(key).toBe(`knowledge-base/${A.tenantId}/${id}/delete-me.txt`);
    expect(await store.exists(key)).toBe(true);
    expect(await chunkCount(id)).toBeGreaterThan(0);

    expect((await api(A.key, 'DELETE', `/knowledge-base/documents/${id}`)).status).toBe(204);
    expect(await chunkCount(id)).toBe(0);
    expect(await store.exists(key)).toBe(false);
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).status).toBe(404);
    const gone = await api(A.key, 'POST', '/knowledge-base/search', { query: 'ZEBRA-0042' });
    expect((gone.json.matches as Json[]).some((m) => m.documentId === id)).toBe(false);
    expect((await api(A.key, 'DELETE', `/knowledge-base/documents/${id}`)).status).toBe(404);
  }, 60_000);

  it('a document deleted while its job runs is not resurrected', async () => {
    let release!: () => void;
    embedder.gate = new Promise<void>((r) => (release = r));
    const calls = embedder.documentCalls;
    const res = await upload(A.key, { name: 'racing.txt', data: 'Deliveries arrive on Tuesdays.' });
    const id = res.json.id as string;
    const until = Date.now() + 20_000;
    while (embedder.documentCalls === calls && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(embedder.documentCalls).toBeGreaterThan(calls);
    expect((await api(A.key, 'DELETE', `/knowledge-base/documents/${id}`)).status).toBe(204);
    embedder.gate = null;
    release();
    await new Promise((r) => setTimeout(r, 500));
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).status).toBe(404);
    expect(await chunkCount(id)).toBe(0);
    const job = await database.pool.query<{ status: string }>('select status from jobs where kind = $1 and subject_id = $2', [KB_INDEX_JOB, id]);
    expect(job.rows[0]?.status).not.toBe('running');
  }, 30_000);

  it("another tenant's documents are 404 and never in its search", async () => {
    const res = await upload(A.key, { name: 'private.txt', data: 'Tenant A vault code is QUOKKA-7781.' });
    const id = res.json.id as string;
    await settle(A.key, id);
    for (const [method, url] of [
      ['GET', `/knowledge-base/documents/${id}`],
      ['GET', `/knowledge-base/documents/${id}/status`],
      ['POST', `/knowledge-base/documents/${id}/reindex`],
      ['DELETE', `/knowledge-base/documents/${id}`],
    ] as const) {
      const r = await api(B.key, method, url);
      expect(r.status, `${method} ${url}`).toBe(404);
    }
    const list = await api(B.key, 'GET', '/knowledge-base/documents?pageSize=100');
    expect((list.json.data as Json[]).some((d) => d.id === id)).toBe(false);
    const search = await api(B.key, 'POST', '/knowledge-base/search', { query: 'QUOKKA-7781' });
    expect(search.status).toBe(200);
    expect((search.json.matches as Json[]).some((m) => m.documentId === id)).toBe(false);
    const scoped = await api(B.key, 'POST', '/knowledge-base/search', { query: 'QUOKKA-7781', documentIds: [id] });
    expect(scoped.status).toBe(422);
    expect(scoped.json.errors[0].field).toBe('documentIds');
    expect((await api(A.key, 'GET', `/knowledge-base/documents/${id}`)).status).toBe(200);
  }, 30_000);

  it('reads need agents:read, writes agents:write', async () => {
    const reader = await A.mintKey({ scopes: ['agents:read'] });
    const other = await A.mintKey({ scopes: ['conversations:read'] });
    expect((await api(reader.key, 'GET', '/knowledge-base/documents')).status).toBe(200);
    expect((await api(reader.key, 'POST', '/knowledge-base/search', { query: 'hours' })).status).toBe(200);
    const up = await upload(reader.key, { name: 'x.txt', data: 'x' });
    expect(up.status).toBe(403);
    const any = (await api(A.key, 'GET', '/knowledge-base/documents?pageSize=1')).json.data[0].id as string;
    expect((await api(reader.key, 'POST', `/knowledge-base/documents/${any}/reindex`)).status).toBe(403);
    expect((await api(reader.key, 'DELETE', `/knowledge-base/documents/${any}`)).status).toBe(403);
    expect((await api(other.key, 'GET', '/knowledge-base/documents')).status).toBe(403);
    expect((await api(other.key, 'GET', `/knowledge-base/documents/${any}`)).status).toBe(403);
    expect((await api(other.key, 'POST', '/knowledge-base/search', { query: 'hours' })).status).toBe(403);
    const anon = await fetch(`${base}/api/v1/knowledge-base/documents`);
    expect(anon.status).toBe(401);
  });
});
