/**
 * `pnpm bench:kb [-- --sizes 10000,100000] [--queries 300] [--chunk-words 300] [--dims 384]
 * [--concurrency 2] [--database-url postgres://postgres@127.0.0.1:5432/postgres]`
 *
 * Indexes a generated document set (100 chunks per document) into a fresh database on the
 * given Postgres through the knowledge base's real write path (`KbIndex.replaceDocumentChunks`:
 * one transaction per document, generated full-text vector, GIN), and at each size runs
 * hybrid searches through `KbIndex.search`. Prints indexing throughput (chunks/s) and search
 * latency p50/p99 per size, with the vector path used (pgvector or the in-process fallback),
 * and writes the figures as JSON to loadtest/results/. Vectors are random unit vectors: the
 * bench measures the index, not an embedder (embedding cost is the embedder's own bench).
 * The bench database is dropped at the end.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { newId } from '@vap/shared';
// The index is not part of the control plane's public API; the bench drives it directly, as the indexing job will.
import { openDatabase, runMigrations } from '../../control-plane/src/db/database.js';
import type { Database } from '../../control-plane/src/db/database.js';
import { KbIndex } from '../../control-plane/src/modules/knowledge-base/index/kb-index.js';
import { detectVectorSupport } from '../../control-plane/src/modules/knowledge-base/index/vector-support.js';
import type { KbChunk } from '../../control-plane/src/modules/knowledge-base/types.js';
import { KbCorpus } from './kb-bench-corpus.js';
import { machineInfo } from './machine-info.js';
import { runBounded } from './run-bounded.js';

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));
const CHUNKS_PER_DOCUMENT = 100;
const MODEL = 'bench-random';

interface KbBenchSettings {
  databaseUrl: string;
  sizes: number[];
  queries: number;
  chunkWords: number;
  dims: number;
  concurrency: number;
}

function parseArgs(argv: string[]): KbBenchSettings {
  const s: KbBenchSettings = {
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
    sizes: [10_000, 100_000],
    queries: 300,
    chunkWords: 300,
    dims: 384,
    concurrency: 2,
  };
  const problems: string[] = [];
  const int = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) problems.push(`--${name}: must be an integer >= ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    i++;
    if (flag === '--database-url') {
      if (!value || !URL.canParse(value)) problems.push('--database-url: must be a postgres:// URL');
      s.databaseUrl = value ?? '';
    } else if (flag === '--sizes') s.sizes = (value ?? '').split(',').map((v) => int('sizes', v, CHUNKS_PER_DOCUMENT));
    else if (flag === '--queries') s.queries = int('queries', value, 1);
    else if (flag === '--chunk-words') s.chunkWords = int('chunk-words', value, 1);
    else if (flag === '--dims') s.dims = int('dims', value, 2);
    else if (flag === '--concurrency') s.concurrency = int('concurrency', value, 1);
    else if (flag !== '--') {
      problems.push(`unknown option ${flag}`);
      i--;
    }
  }
  s.sizes.sort((a, b) => a - b);
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exit(2);
  }
  return s;
}

function nearestRank(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

function latencySummary(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { samples: sorted.length, p50Ms: r(nearestRank(sorted, 0.5)), p95Ms: r(nearestRank(sorted, 0.95)), p99Ms: r(nearestRank(sorted, 0.99)), maxMs: r(sorted.at(-1)!) };
}

interface SizeFigures {
  chunks: number;
  documents: number;
  indexing: { chunks: number; seconds: number; chunksPerSec: number };
  /** The first search of a fresh KbIndex (a cold replica: fallback loads the tenant's vectors). */
  coldFirstSearchMs: number;
  search: ReturnType<typeof latencySummary>;
  searchWithCode: ReturnType<typeof latencySummary>;
  searchPlain: ReturnType<typeof latencySummary>;
  fallbackCacheMB: number | null;
  tableMB: number;
}

const settings = parseArgs(process.argv.slice(2));
const dbName = `kb_bench_${process.pid}_${Date.now()}`;
let database: Database | undefined;

async function adminQuery(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: settings.databaseUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

async function run(): Promise<number> {
  const startedAt = new Date();
  await adminQuery(`create database ${dbName}`);
  const url = new URL(settings.databaseUrl);
  url.pathname = `/${dbName}`;
  database = openDatabase(url.toString(), settings.concurrency + 2);
  await runMigrations(database);
  const pool = database.pool;
  const vectorSupport = await detectVectorSupport(pool);
  const index = new KbIndex({ pool, vectorSupport });
  const tenantId = newId('ten');
  await pool.query(`insert into tenants (id, name, slug, plan) values ($1, 'KB bench', $1, 'enterprise')`, [tenantId]);
  console.log(`vector path: ${vectorSupport.kind}${vectorSupport.kind === 'fallback' ? ` (${vectorSupport.reason})` : ` ${vectorSupport.version}`}; vectors: random unit vectors, ${settings.dims} dims`);

  const corpus = new KbCorpus();
  const codes: string[] = [];
  let indexed = 0;
  let documents = 0;
  const figures: SizeFigures[] = [];

  const indexOne = async (): Promise<void> => {
    const id = newId('kb');
    documents++;
    await pool.query(
      `insert into kb_documents (id, tenant_id, name, filename, mime_type, document_type, size_bytes, storage_key, metadata)
       values ($1, $2, $3, $3, 'text/plain', 'text', 0, $1, '{"source":"bench"}')`,
      [id, tenantId, `Document ${documents}`],
    );
    const chunks: KbChunk[] = [];
    const vectors: Float32Array[] = [];
    for (let p = 0; p < CHUNKS_PER_DOCUMENT; p++) {
      const { text, code } = corpus.chunk(settings.chunkWords);
      if (code && codes.length < 5000) codes.push(code);
      chunks.push({ position: p, text, tokenCount: Math.round(settings.chunkWords * 1.4), pageNumber: null, context: `Document ${documents}` });
      vectors.push(corpus.randomVector(settings.dims));
    }
    await index.replaceDocumentChunks(id, MODEL, chunks, vectors);
    indexed += chunks.length;
  };

  for (const target of settings.sizes) {
    const from = indexed;
    const t0 = performance.now();
    let lastLog = t0;
    const worker = async () => {
      while (documents * CHUNKS_PER_DOCUMENT < target) {
        await indexOne();
        if (performance.now() - lastLog > 10_000) {
          lastLog = performance.now();
          console.log(`  indexed ${indexed} chunks (${Math.round((indexed - from) / ((lastLog - t0) / 1000))} chunks/s)`);
        }
      }
    };
    await Promise.all(Array.from({ length: settings.concurrency }, worker));
    const seconds = (performance.now() - t0) / 1000;
    // As autovacuum would by now: planner statistics and the visibility map for the new rows.
    await pool.query('vacuum analyze kb_chunks');
    await pool.query('vacuum analyze kb_documents');

    const makeQuery = () => {
      const text = corpus.query(codes);
      return { text, hasCode: /[A-Z]{2}-\d{4}/.test(text), vector: corpus.randomVector(settings.dims) };
    };
    const cold = new KbIndex({ pool, vectorSupport });
    const first = makeQuery();
    const c0 = performance.now();
    await cold.search({ tenantId, query: first.text, queryVector: first.vector, model: MODEL });
    const coldFirstSearchMs = performance.now() - c0;
    for (let i = 0; i < 20; i++) {
      const q = makeQuery();
      await index.search({ tenantId, query: q.text, queryVector: q.vector, model: MODEL });
    }
    const all: number[] = [];
    const withCode: number[] = [];
    const plain: number[] = [];
    let codeFound = 0;
    for (let i = 0; i < settings.queries; i++) {
      const q = makeQuery();
      const s0 = performance.now();
      const r = await index.search({ tenantId, query: q.text, queryVector: q.vector, model: MODEL, topK: 5 });
      const ms = performance.now() - s0;
      all.push(ms);
      (q.hasCode ? withCode : plain).push(ms);
      const code = q.text.match(/[A-Z]{2}-\d{4}/)?.[0];
      if (code && r.matches[0]?.text.includes(code)) codeFound++;
    }
    const size = await pool.query<{ mb: number }>(`select (pg_total_relation_size('kb_chunks') / 1048576.0)::float8 as mb`);
    const f: SizeFigures = {
      chunks: indexed,
      documents,
      indexing: { chunks: indexed - from, seconds: Math.round(seconds * 10) / 10, chunksPerSec: Math.round((indexed - from) / seconds) },
      coldFirstSearchMs: Math.round(coldFirstSearchMs),
      search: latencySummary(all),
      searchWithCode: latencySummary(withCode),
      searchPlain: latencySummary(plain),
      fallbackCacheMB: vectorSupport.kind === 'fallback' ? Math.round((settings.dims * 4 * indexed) / 1048576) : null,
      tableMB: Math.round(size.rows[0]!.mb),
    };
    figures.push(f);
    console.log(
      `${indexed} chunks: indexing ${f.indexing.chunksPerSec} chunks/s (${f.indexing.chunks} in ${f.indexing.seconds} s); ` +
        `search p50 ${f.search.p50Ms} ms, p99 ${f.search.p99Ms} ms (with a code ${f.searchWithCode.p50Ms}/${f.searchWithCode.p99Ms}, plain ${f.searchPlain.p50Ms}/${f.searchPlain.p99Ms}); ` +
        `cold first search ${f.coldFirstSearchMs} ms; codes ranked first ${codeFound}/${withCode.length}; table ${f.tableMB} MB`,
    );
  }

  const report = {
    kind: 'kb-bench',
    startedAt: startedAt.toISOString(),
    machine: machineInfo(),
    settings: { ...settings, databaseUrl: undefined, chunksPerDocument: CHUNKS_PER_DOCUMENT, vectors: 'random unit vectors' },
    vectorPath: vectorSupport.kind,
    sizes: figures,
  };
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}kb-bench-${startedAt.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-')}.json`;
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log('\n| chunks | indexing chunks/s | search p50 ms | search p99 ms | cold first search ms |');
  console.log('|---|---|---|---|---|');
  for (const f of figures) console.log(`| ${f.chunks} | ${f.indexing.chunksPerSec} | ${f.search.p50Ms} | ${f.search.p99Ms} | ${f.coldFirstSearchMs} |`);
  console.log(`\nwritten ${file}`);
  return 0;
}

await runBounded({
  budgetMs: 60 * 60 * 1000,
  run,
  shutDown: async () => {
    await database?.close().catch(() => undefined);
    await adminQuery(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
  },
});
