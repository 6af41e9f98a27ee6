/**
 * `knowledge.retrieve` answered by the control plane's responder over a real InProcessBus
 * (JSON round trip and schema validation as over NATS), on the run's Postgres with the real
 * index and the local embedder: the right passages, bounded, and never another tenant's or
 * an unassigned document's.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { ReplyPayload, RequestPayload } from '@vap/shared';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { latencyViewOf } from '../../src/modules/conversations/latency-view.js';
import { LocalEmbedder } from '../../src/modules/knowledge-base/embedding/index.js';
import { KbIndex, detectVectorSupport } from '../../src/modules/knowledge-base/index/index.js';
import { boundPassages, startKnowledgeRetrieval } from '../../src/modules/knowledge-base/retrieval.js';
import type { Embedder } from '../../src/modules/knowledge-base/types.js';
import { chunksOf, insertDocument, insertTenant } from './index-fixtures.js';

const log = pino({ level: 'silent' });
let database: Database;
let index: KbIndex;
const embedder = new LocalEmbedder();
const bus = new InProcessBus();
let close: () => Promise<void>;

let tenantA: string;
let tenantB: string;
let agentA: string;
let agentA2: string;
let agentB: string;
const docs: Record<'menu' | 'hours' | 'lobster' | 'reindexing' | 'truffle' | 'long', string> = { menu: '', hours: '', lobster: '', reindexing: '', truffle: '', long: '' };

async function insertAgent(tenantId: string): Promise<string> {
  const id = newId('agt');
  await database.pool.query(`insert into agents (id, tenant_id, name, status, version, config) values ($1, $2, $1, 'active', 1, '{}'::jsonb)`, [id, tenantId]);
  return id;
}

async function indexed(tenantId: string, name: string, texts: string[], agentIds: string[]): Promise<string> {
  const id = await insertDocument(database.pool, tenantId, name);
  await index.replaceDocumentChunks(id, embedder.model, chunksOf(texts), await embedder.embed(texts, 'document'));
  for (const agentId of agentIds) await database.pool.query('insert into kb_document_agents (document_id, agent_id, tenant_id) values ($1, $2, $3)', [id, agentId, tenantId]);
  return id;
}

type Reply = ReplyPayload<'knowledgeRetrieve'>;
const ask = (req: Partial<RequestPayload<'knowledgeRetrieve'>>): Promise<Reply> =>
  bus.request('knowledgeRetrieve', { tenantId: tenantA, agentId: agentA, conversationId: newId('conv'), documentIds: Object.values(docs), query: '', topK: 5, maxChars: 6000, ...req }, { timeoutMs: 5000 });
const passagesOf = (r: Reply) => {
  if (!r.ok) throw new Error(`retrieval failed: ${r.code} ${r.message}`);
  return r.passages;
};

beforeAll(async () => {
  database = openDatabase(inject('databaseUrl'), 4);
  index = new KbIndex({ pool: database.pool, vectorSupport: await detectVectorSupport(database.pool) });
  tenantA = await insertTenant(database.pool);
  tenantB = await insertTenant(database.pool);
  agentA = await insertAgent(tenantA);
  agentA2 = await insertAgent(tenantA);
  agentB = await insertAgent(tenantB);
  docs.menu = await indexed(tenantA, 'Menu', ["The chef's special on Fridays is saffron risotto.", 'Desserts change every week; ask for the tiramisu.'], [agentA]);
  docs.hours = await indexed(tenantA, 'Opening hours', ['We open at noon and close at eleven, every day but Monday.'], [agentA, agentA2]);
  // Same tenant, but assigned to the other agent only.
  docs.lobster = await indexed(tenantA, 'Private menu', ["The chef's special on Fridays is lobster thermidor."], [agentA2]);
  // Assigned, but being reindexed: out of search until its new chunks are in.
  docs.reindexing = await indexed(tenantA, 'Old specials', ["The chef's special on Fridays used to be osso buco."], [agentA]);
  await database.pool.query(`update kb_documents set status = 'processing', progress = 0 where id = $1`, [docs.reindexing]);
  // Another tenant's document with the same question answered differently.
  docs.truffle = await indexed(tenantB, 'Menu', ["The chef's special on Fridays is truffle pasta."], [agentB]);
  docs.long = await indexed(tenantA, 'Wine list', [
    `${'Our Friday wine list pairs the special with a Soave. '.repeat(12)}`.trim(),
    `${'On Fridays the sommelier recommends a Barolo with the special. '.repeat(12)}`.trim(),
  ], [agentA]);
  ({ close } = await startKnowledgeRetrieval({ bus, pool: database.pool, log, embedding: { baseUrl: undefined, apiKey: undefined, model: undefined }, index, embedder }));
});

afterAll(async () => {
  await close?.();
  await database?.close();
});

describe('knowledge.retrieve', () => {
  it("answers with the agent's best passages, best first, with document names and scores", async () => {
    const reply = await ask({ query: "What is the chef's special on Fridays?" });
    const passages = passagesOf(reply);
    expect(passages[0]).toMatchObject({ documentId: docs.menu, documentName: 'Menu', text: "The chef's special on Fridays is saffron risotto.", pageNumber: null });
    for (let i = 1; i < passages.length; i++) expect(passages[i]!.score).toBeLessThanOrEqual(passages[i - 1]!.score);
    expect(reply.ok && reply.tookMs).toBeGreaterThanOrEqual(0);
  });

  it("never returns another tenant's documents, unassigned documents, or documents not indexed", async () => {
    const seen = new Set<string>();
    for (const query of ["What is the chef's special on Fridays?", 'special Fridays lobster truffle osso buco', 'lobster thermidor', 'truffle pasta']) {
      for (const p of passagesOf(await ask({ query, topK: 20 }))) seen.add(p.documentId);
    }
    expect([...seen].sort()).toEqual([docs.menu, docs.hours, docs.long].filter((d) => seen.has(d)).sort());
    expect(seen.has(docs.menu)).toBe(true);
    for (const d of [docs.lobster, docs.truffle, docs.reindexing]) expect(seen.has(d)).toBe(false);

    // The other agent of the tenant sees its own documents, and the other tenant only its own.
    const forA2 = passagesOf(await ask({ agentId: agentA2, query: "What is the chef's special on Fridays?", topK: 20 }));
    expect(new Set(forA2.map((p) => p.documentId))).toEqual(new Set([docs.lobster, docs.hours].filter((d) => forA2.some((p) => p.documentId === d))));
    expect(forA2[0]!.text).toContain('lobster');
    const forB = passagesOf(await ask({ tenantId: tenantB, agentId: agentB, query: "What is the chef's special on Fridays?", topK: 20 }));
    expect(forB.map((p) => p.documentId)).toEqual([docs.truffle]);
    // A request naming tenant B with tenant A's agent (or the reverse) finds nothing.
    expect(passagesOf(await ask({ tenantId: tenantB, agentId: agentA, query: 'special Fridays' }))).toEqual([]);
    expect(passagesOf(await ask({ tenantId: tenantA, agentId: agentB, query: 'special Fridays' }))).toEqual([]);
  });

  it('keeps the passages within maxChars, cutting the last one that fits in part', async () => {
    const full = passagesOf(await ask({ query: 'Which wine goes with the Friday special?', topK: 5 }));
    const totalFull = full.reduce((n, p) => n + p.text.length, 0);
    expect(totalFull).toBeGreaterThan(900);
    const bounded = passagesOf(await ask({ query: 'Which wine goes with the Friday special?', topK: 5, maxChars: 900 }));
    expect(bounded.reduce((n, p) => n + p.text.length, 0)).toBeLessThanOrEqual(900);
    expect(bounded.map((p) => p.chunkId)).toEqual(full.slice(0, bounded.length).map((p) => p.chunkId));
    expect(bounded.at(-1)!.text.endsWith('…')).toBe(true);
  });

  it('answers nothing for an empty query or no documents, and ok:false when the embedder fails', async () => {
    expect(passagesOf(await ask({ query: '   ' }))).toEqual([]);
    expect(passagesOf(await ask({ query: 'special', documentIds: [] }))).toEqual([]);
    const failing: Embedder = { model: embedder.model, dimensions: embedder.dimensions, embed: () => Promise.reject(new Error('connection refused')) };
    const other = new InProcessBus();
    const started = await startKnowledgeRetrieval({ bus: other, pool: database.pool, log, embedding: { baseUrl: undefined, apiKey: undefined, model: undefined }, index, embedder: failing });
    try {
      const reply = await other.request('knowledgeRetrieve', { tenantId: tenantA, agentId: agentA, conversationId: newId('conv'), documentIds: [docs.menu], query: 'special', topK: 5, maxChars: 6000 });
      expect(reply).toMatchObject({ ok: false, code: 'embedding_failed', message: expect.stringContaining('connection refused') });
    } finally {
      await started.close();
    }
  });
});

describe('boundPassages', () => {
  it('keeps whole passages best first, cuts the first that does not fit, drops the rest', () => {
    const p = (text: string) => ({ text });
    expect(boundPassages([p('a'.repeat(100)), p('b'.repeat(100))], 250).map((x) => x.text.length)).toEqual([100, 100]);
    const cut = boundPassages([p('One sentence here. '.repeat(30)), p('short')], 300);
    expect(cut).toHaveLength(1);
    expect(cut[0]!.text.length).toBeLessThanOrEqual(300);
    expect(cut[0]!.text.endsWith('here.…')).toBe(true);
    // Under 200 characters left: the passage is left out rather than cut to a stub.
    expect(boundPassages([p('x'.repeat(900)), p('y'.repeat(400))], 1000).map((x) => x.text[0])).toEqual(['x']);
  });
});

describe('latency view with retrieval', () => {
  it('shows retrievalMs per turn (0 for breakdowns stored before it) and can name retrieval the slowest stage', () => {
    const view = latencyViewOf('conv_1', [
      { turnId: 'a', endpointingMs: 100, sttMs: 50, retrievalMs: 700, llmFirstTokenMs: 200, ttsFirstByteMs: 100, overheadMs: 10, totalMs: 1110 },
      { turnId: 'b', endpointingMs: 100, sttMs: 50, llmFirstTokenMs: 200, ttsFirstByteMs: 100, overheadMs: 10, totalMs: 410 },
    ]);
    expect(view.turns.map((t) => t.retrievalMs)).toEqual([700, 0]);
    expect(view.summary.slowestStage).toBe('retrieval');
  });
});
