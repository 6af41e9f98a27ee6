/**
 * Knowledge-base uploads and indexing at size, over real HTTP on a database of its own:
 * a ~40 MB upload is streamed to the store (the process's live memory never grows by
 * anything like the file), and a multi-MB text document is parsed and chunked in the worker
 * while the event loop stays responsive (chunking on the main thread blocks it for seconds).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, LocalObjectStore, S3ObjectStore } from '@vap/shared';
import { startS3rver } from '../../../shared/test/start-s3rver.js';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { JobRunner } from '../../src/modules/jobs/job-runner.js';
import { LocalEmbedder } from '../../src/modules/knowledge-base/embedding/index.js';
import { KB_INDEX_JOB, KbIndexingJob } from '../../src/modules/knowledge-base/indexing-job.js';
import { createKnowledgeBase } from '../../src/modules/knowledge-base/runtime.js';
import type { KnowledgeBase } from '../../src/modules/knowledge-base/runtime.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, createTenant, isolatedDatabase, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';

setFlagsFromString('--expose-gc');
/** V8's collector (exposed above for this file's measurements): full by default, or a quick scavenge of the young generation. */
const gc = runInNewContext('gc') as (opts?: { type: 'major' | 'minor' }) => void;

const log = pino({ level: 'silent' });
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let database: Database;
let app: FastifyInstance;
let base: URL;
let kb: KnowledgeBase;
let store: LocalObjectStore;
let dataDir: string;
let A: TestTenant;

beforeAll(async () => {
  iso = await isolatedDatabase();
  database = iso.database;
  dataDir = mkdtempSync(path.join(tmpdir(), 'kb-stream-'));
  const config = testConfig({ DATABASE_URL: iso.url, DATA_DIR: dataDir });
  store = new LocalObjectStore(path.join(dataDir, 'store'));
  kb = await createKnowledgeBase({ pool: database.pool, store, embedding: config.knowledgeBase.embedding, dataDir, embedder: new LocalEmbedder() });
  app = await buildApp(config, { database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger: log, recordings: store, knowledgeBase: kb });
  base = new URL(await app.listen({ host: '127.0.0.1', port: 0 }));
  A = await createTenant(database);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await kb?.close();
  await iso?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Writes a text file of about `bytes` bytes, 1 MB at a time (never whole in memory), with varied paragraphs. */
async function writeTextFile(file: string, bytes: number): Promise<number> {
  const out = createWriteStream(file);
  let written = 0;
  let n = 0;
  while (written < bytes) {
    const paras: string[] = [];
    let size = 0;
    while (size < 1024 * 1024) {
      n++;
      const p = `Paragraph ${n}. Part ${randomBytes(4).toString('hex')} sits on shelf ${n % 97} in aisle ${n % 13}; the night crew checks it every ${1 + (n % 11)} weeks. Replacement orders go to supplier ${n % 31} with code ${(n * 7919) % 100000}.\n\n`;
      paras.push(p);
      size += p.length;
    }
    const chunk = paras.join('');
    written += chunk.length;
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'close');
  return written;
}

/** POSTs `file` as the multipart `file` part, streamed from disk with a Content-Length (the client holds no copy either). */
function streamUpload(key: string, file: string, filename: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const boundary = `----k6${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = head.length + statSync(file).size + tail.length;
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL('/api/v1/knowledge-base/documents', base),
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': length } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as Record<string, unknown> }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.write(head);
    const body = createReadStream(file);
    body.on('error', reject);
    body.on('end', () => req.end(tail));
    body.pipe(req, { end: false });
  });
}

async function status(id: string): Promise<Record<string, unknown>> {
  const res = await fetch(new URL(`/api/v1/knowledge-base/documents/${id}/status`, base), { headers: { authorization: `Bearer ${A.key}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

/** The process's live JS and buffer memory. */
const live = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

describe('a large upload is streamed, never buffered', () => {
  it('stores a ~40 MB file byte for byte while live memory grows by far less than the file', async () => {
    const file = path.join(dataDir, 'big.txt');
    const size = await writeTextFile(file, 40 * 1024 * 1024);
    gc();
    const before = live();
    let peak = before;
    // Scavenges (the streams' short-lived buffers go) and samples every few ms: a copy of the file held for even one store write is seen.
    const sampler = setInterval(() => {
      gc({ type: 'minor' });
      peak = Math.max(peak, live());
    }, 5);
    let res;
    try {
      res = await streamUpload(A.key, file, 'big.txt');
    } finally {
      clearInterval(sampler);
    }
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const growth = peak - before;
    // The file is 40 MB; streaming measures about 4 MB here (busboy, fs streams, the request). Buffering it measures 41 MB.
    expect(growth, `live memory grew by ${(growth / 1048576).toFixed(1)} MB`).toBeLessThan(12 * 1024 * 1024);
    const id = res.json.id as string;
    const row = (await database.pool.query<{ storage_key: string; size_bytes: string }>('select storage_key, size_bytes from kb_documents where id = $1', [id])).rows[0]!;
    expect(Number(row.size_bytes)).toBe(size);
    expect(statSync(store.pathOf(row.storage_key)).size).toBe(size);
    // No job runner here: the document waits in `processing`; delete it so nothing else trips on it.
    await fetch(new URL(`/api/v1/knowledge-base/documents/${id}`, base), { method: 'DELETE', headers: { authorization: `Bearer ${A.key}` } });
  }, 120_000);
});

describe('indexing a large document keeps the event loop responsive', () => {
  it('parses and chunks ~6 MB of text in the worker: the loop never stalls while the job runs', async () => {
    const file = path.join(dataDir, 'manual.txt');
    await writeTextFile(file, 6 * 1024 * 1024);
    const res = await streamUpload(A.key, file, 'manual.txt');
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const id = res.json.id as string;

    const runner = new JobRunner({ pool: database.pool, log, concurrency: 1, pollIntervalMs: 100, retryDelaysMs: [100] });
    runner.register(KB_INDEX_JOB, new KbIndexingJob({ pool: database.pool, kb, log }).handle);
    const histogram = monitorEventLoopDelay({ resolution: 10 });
    // The probe: a 10 ms timer's lateness, measured over the whole fetch, parse and chunk phase.
    let maxLateMs = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      maxLateMs = Math.max(maxLateMs, now - last - 10);
      last = now;
    }, 10);
    histogram.enable();
    await runner.start();
    let seen: Record<string, unknown>;
    const until = Date.now() + 240_000;
    try {
      // Until the chunks are back from the worker (progress 20) or the job ended.
      for (;;) {
        seen = await status(id);
        if (seen.status !== 'processing' || (seen.progress as number) >= 20) break;
        if (Date.now() > until) throw new Error(`still parsing: ${JSON.stringify(seen)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      clearInterval(probe);
      histogram.disable();
    }
    const p99 = histogram.percentile(99) / 1e6;
    // With chunking on the main thread this file stalls the loop for one synchronous call of
    // about 10 s here; in the worker the worst lateness measured ~190 ms, p99 ~100 ms, on this
    // shared 2-core machine (the worker and other processes compete for the CPU). The bound
    // leaves room for that noise and is still a twentieth of the stall.
    expect(maxLateMs, `max timer lateness ${maxLateMs.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`).toBeLessThan(500);
    try {
      for (;;) {
        seen = await status(id);
        if (seen.status !== 'processing') break;
        if (Date.now() > until) throw new Error(`still indexing: ${JSON.stringify(seen)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await runner.stop();
    }
    expect(seen).toMatchObject({ status: 'indexed', progress: 100, error: null });
    const n = Number((await database.pool.query<{ n: string }>('select count(*) as n from kb_chunks where document_id = $1', [id])).rows[0]!.n);
    // ~6 MB at ~512 tokens (about 2 KB of this text) a chunk.
    expect(n).toBeGreaterThan(1500);
    expect(seen.chunkCount).toBe(n);
  }, 300_000);
});

describe('with an S3 store', () => {
  it('streams the upload into the bucket and the file back out for indexing, leaving no temporary file', async () => {
    const s3 = await startS3rver();
    const s3Store = new S3ObjectStore(s3.config);
    const s3Dir = mkdtempSync(path.join(tmpdir(), 'kb-stream-s3-'));
    const config = testConfig({ DATABASE_URL: iso.url, DATA_DIR: s3Dir });
    const s3Kb = await createKnowledgeBase({ pool: database.pool, store: s3Store, embedding: config.knowledgeBase.embedding, dataDir: s3Dir, embedder: new LocalEmbedder() });
    const s3App = await buildApp(config, { database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger: log, recordings: s3Store, knowledgeBase: s3Kb });
    const runner = new JobRunner({ pool: database.pool, log, concurrency: 1, pollIntervalMs: 100, retryDelaysMs: [100] });
    runner.register(KB_INDEX_JOB, new KbIndexingJob({ pool: database.pool, kb: s3Kb, log }).handle);
    const savedBase = base;
    try {
      base = new URL(await s3App.listen({ host: '127.0.0.1', port: 0 }));
      const file = path.join(s3Dir, 'parts.txt');
      const size = await writeTextFile(file, 3 * 1024 * 1024);
      const res = await streamUpload(A.key, file, 'parts.txt');
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      const id = res.json.id as string;
      const key = (await database.pool.query<{ storage_key: string }>('select storage_key from kb_documents where id = $1', [id])).rows[0]!.storage_key;
      expect((await s3Store.get(key))?.byteLength).toBe(size);
      await runner.start();
      let seen: Record<string, unknown>;
      const until = Date.now() + 180_000;
      for (;;) {
        seen = await status(id);
        if (seen.status !== 'processing') break;
        if (Date.now() > until) throw new Error(`still indexing: ${JSON.stringify(seen)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(seen).toMatchObject({ status: 'indexed', progress: 100, error: null });
      expect(seen.chunkCount as number).toBeGreaterThan(700);
      expect(readdirSync(s3Kb.tempDir)).toEqual([]);
    } finally {
      base = savedBase;
      await runner.stop();
      await s3App.close();
      await s3Kb.close();
      await s3Store.close();
      await s3.close();
      rmSync(s3Dir, { recursive: true, force: true });
    }
  }, 300_000);
});
