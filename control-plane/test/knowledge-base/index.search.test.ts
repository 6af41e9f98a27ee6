import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { KbIndex, KbIndexError, hnswIndexName, nearestChunksSql, vectorLiteral } from '../../src/modules/knowledge-base/index/kb-index.js';
import { detectVectorSupport } from '../../src/modules/knowledge-base/index/vector-support.js';
import type { VectorSupport } from '../../src/modules/knowledge-base/index/vector-support.js';
import { chunksOf, insertDocument, insertTenant, neutralVector, startPgliteWithVector, topicVector } from './index-fixtures.js';

const MODEL = 'test-topics-8';

interface Backend {
  name: string;
  expected: VectorSupport['kind'];
  start(): Promise<{ database: Database; support: VectorSupport; stop(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    // The run's Postgres (the machine's 15, or the embedded one): the in-process exact search.
    name: 'Postgres without pgvector (fallback)',
    expected: 'fallback',
    start: async () => {
      const database = openDatabase(inject('databaseUrl'), 4);
      // Forced, so this suite tests the fallback even on a Postgres that has pgvector; detection is tested below.
      return { database, support: { kind: 'fallback', reason: 'forced by the test' }, stop: () => database.close() };
    },
  },
  {
    name: 'PGlite with pgvector (HNSW)',
    expected: 'pgvector',
    start: async () => {
      const pglite = await startPgliteWithVector();
      const support = await detectVectorSupport(pglite.database.pool);
      return { database: pglite.database, support, stop: pglite.stop };
    },
  },
];

describe('detectVectorSupport', () => {
  it('reports pgvector exactly when the server offers the extension, with the reason when not', async () => {
    const database = openDatabase(inject('databaseUrl'), 1);
    try {
      const available = await database.pool.query(`select 1 from pg_available_extensions where name = 'vector'`);
      const support = await detectVectorSupport(database.pool);
      if (available.rowCount === 0) expect(support).toMatchObject({ kind: 'fallback', reason: expect.stringContaining('vector') });
      else expect(support.kind).toBe('pgvector');
    } finally {
      await database.close();
    }
  });
});

describe.each(backends)('knowledge-base index on $name', (backend) => {
  let database: Database;
  let support: VectorSupport;
  let stop: () => Promise<void>;
  let index: KbIndex;
  let tenantId: string;
  let hours: string;
  let refunds: string;
  let codes: string;

  beforeAll(async () => {
    ({ database, support, stop } = await backend.start());
    index = new KbIndex({ pool: database.pool, vectorSupport: support });
    tenantId = await insertTenant(database.pool);
    hours = await insertDocument(database.pool, tenantId, 'Opening hours', { team: 'front-desk' });
    refunds = await insertDocument(database.pool, tenantId, 'Refund policy');
    codes = await insertDocument(database.pool, tenantId, 'Shipping notes');
    await index.replaceDocumentChunks(
      hours,
      MODEL,
      chunksOf(['The bistro welcomes guests from noon until eleven, every day but Monday.', 'Holiday timetable: closed on the 25th of December.']),
      [topicVector('hours', 0.1), topicVector('hours', 0.3)],
    );
    await index.replaceDocumentChunks(
      refunds,
      MODEL,
      chunksOf(['Money back within 30 days when the receipt is shown.', 'Vouchers are not refundable once used.']),
      [topicVector('refunds', 0.1), topicVector('refunds', 0.2)],
    );
    await index.replaceDocumentChunks(
      codes,
      MODEL,
      chunksOf(['Parcels leave the warehouse on weekdays.', 'Crates marked XK-4471 hold the chilled seafood and go by courier.', 'Pallets need a forklift.']),
      [topicVector('shipping', 0.1), topicVector('shipping', 0.2), topicVector('shipping', 0.3)],
    );
  });
  afterAll(async () => stop());

  it('reports which vector path it runs on', () => {
    expect(support.kind).toBe(backend.expected);
  });

  it.runIf(backend.expected === 'pgvector')('has an HNSW index per model that the nearest-chunk query can use', async () => {
    const indexes = await database.pool.query<{ indexdef: string }>(`select indexdef from pg_indexes where tablename = 'kb_chunks' and indexdef like '%hnsw%'`);
    const mine = indexes.rows.filter((r) => r.indexdef.includes(`'${MODEL}'`));
    expect(mine.length).toBe(1);
    expect(mine[0]!.indexdef).toMatch(/vector\(8\)\)\s*vector_cosine_ops/);
    const client = await database.pool.connect();
    try {
      // The table is tiny, so make the planner show whether the index is usable at all.
      await client.query('begin');
      await client.query('set local enable_seqscan = off');
      await client.query('set local enable_bitmapscan = off');
      const plan = await client.query(`explain ${nearestChunksSql(MODEL, 8)}`, [vectorLiteral(topicVector('hours')), tenantId, [hours, refunds, codes], 5]);
      await client.query('rollback');
      expect(plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')).toContain(hnswIndexName(MODEL));
    } finally {
      client.release();
    }
    // Start-up recreates a missing index (a database that gained pgvector after vectors were written).
    await database.pool.query(`drop index ${hnswIndexName(MODEL)}`);
    expect(await new KbIndex({ pool: database.pool, vectorSupport: support }).ensureVectorIndexes()).toContain(MODEL);
    const again = await database.pool.query('select 1 from pg_indexes where indexname = $1', [hnswIndexName(MODEL)]);
    expect(again.rowCount).toBe(1);
  });

  it('finds the chunk whose meaning matches a paraphrased query by its vector', async () => {
    const r = await index.search({ tenantId, query: 'When can I come by for lunch?', queryVector: topicVector('hours', 0.12), model: MODEL });
    expect(r.matches[0]!.documentId).toBe(hours);
    expect(r.matches[0]!.documentName).toBe('Opening hours');
    expect(r.matches[0]!.excerpt).toContain('welcomes guests from noon');
    expect(r.matches[0]!.metadata).toEqual({ team: 'front-desk' });
    expect(r.matches[0]!.textShare).toBe(0);
    expect(r.matches[0]!.score).toBeCloseTo(r.matches[0]!.vectorSimilarity, 6);
    expect(r.matches[0]!.score).toBeGreaterThan(0.95);
    expect(r.matches.length).toBe(5);
    for (let i = 1; i < r.matches.length; i++) expect(r.matches[i]!.score).toBeLessThanOrEqual(r.matches[i - 1]!.score);
  });

  it('finds an exact code through full text although its vector is not close', async () => {
    // An identifier's embedding is close to nothing in particular: equally (and weakly) similar to every chunk.
    for (const query of ['XK-4471', 'which crate has xk4471', 'crate 4471']) {
      const r = await index.search({ tenantId, query, queryVector: neutralVector(), model: MODEL, topK: 3 });
      expect(r.matches[0]!.excerpt, query).toContain('XK-4471');
      expect(r.matches[0]!.vectorSimilarity).toBeLessThan(0.5);
      expect(r.matches[0]!.textShare).toBe(1);
      expect(r.matches[1]!.score).toBeLessThan(r.matches[0]!.score - 0.3);
    }
    // Even against a query vector very close to another chunk, the code's chunk scores at least the text weight.
    const r = await index.search({ tenantId, query: 'XK-4471', queryVector: topicVector('hours'), model: MODEL, topK: 3 });
    const code = r.matches.find((m) => m.excerpt.includes('XK-4471'));
    expect(code?.score).toBeGreaterThanOrEqual(0.8);
  });

  it('drops matches below minScore and counts only those above it', async () => {
    const all = await index.search({ tenantId, query: 'refund', queryVector: topicVector('refunds'), model: MODEL, topK: 10 });
    expect(all.totalMatches).toBe(7);
    const strict = await index.search({ tenantId, query: 'refund', queryVector: topicVector('refunds'), model: MODEL, topK: 10, minScore: 0.9 });
    expect(strict.matches.map((m) => m.documentId)).toEqual([refunds, refunds]);
    expect(strict.totalMatches).toBe(2);
    expect(strict.matches.every((m) => m.score >= 0.9)).toBe(true);
  });

  it('searches only the listed documents', async () => {
    const r = await index.search({ tenantId, query: 'XK-4471', queryVector: topicVector('shipping'), model: MODEL, documentIds: [hours, refunds], topK: 10 });
    expect(r.matches.length).toBe(4);
    expect(new Set(r.matches.map((m) => m.documentId))).toEqual(new Set([hours, refunds]));
    const none = await index.search({ tenantId, query: 'XK-4471', queryVector: topicVector('shipping'), model: MODEL, documentIds: ['kb_doesnotexist'] });
    expect(none).toEqual({ matches: [], totalMatches: 0 });
  });

  it("never returns another tenant's chunks", async () => {
    const other = await insertTenant(database.pool);
    const doc = await insertDocument(database.pool, other, 'Other tenant shipping');
    await index.replaceDocumentChunks(doc, MODEL, chunksOf(['Crate XK-4471 belongs to someone else.']), [topicVector('shipping')]);
    const mine = await index.search({ tenantId, query: 'XK-4471', queryVector: topicVector('shipping'), model: MODEL, topK: 10 });
    expect(mine.matches.some((m) => m.documentId === doc)).toBe(false);
    const theirs = await index.search({ tenantId: other, query: 'XK-4471', queryVector: topicVector('shipping'), model: MODEL, topK: 10 });
    expect(theirs.matches.map((m) => m.documentId)).toEqual([doc]);
    // Their document id in my search matches nothing.
    const probe = await index.search({ tenantId, query: 'XK-4471', queryVector: topicVector('shipping'), model: MODEL, documentIds: [doc] });
    expect(probe.totalMatches).toBe(0);
  });

  it('never compares vectors of two models', async () => {
    const t = await insertTenant(database.pool);
    const oldDoc = await insertDocument(database.pool, t, 'Old model');
    const newDoc = await insertDocument(database.pool, t, 'New model');
    await index.replaceDocumentChunks(oldDoc, `${MODEL}-old`, chunksOf(['Parking behind the bistro.']), [topicVector('parking')]);
    await index.replaceDocumentChunks(newDoc, 'test-topics-12', chunksOf(['Parking is free after six.']), [topicVector('parking', 0, 12)]);
    const r = await index.search({ tenantId: t, query: 'parking', queryVector: topicVector('parking', 0, 12), model: 'test-topics-12', topK: 10 });
    expect(r.matches.map((m) => m.documentId)).toEqual([newDoc]);
    const old = await index.search({ tenantId: t, query: 'parking', queryVector: topicVector('parking'), model: `${MODEL}-old`, topK: 10 });
    expect(old.matches.map((m) => m.documentId)).toEqual([oldDoc]);
    await expect(index.search({ tenantId: t, query: 'parking', queryVector: topicVector('parking'), model: 'test-topics-12' })).rejects.toMatchObject({ code: 'dimension_mismatch' });
    await expect(index.replaceDocumentChunks(oldDoc, 'test-topics-12', chunksOf(['x']), [topicVector('parking')])).rejects.toBeInstanceOf(KbIndexError);
  });

  it('reindex replaces the chunk set (no old chunks, no mixed models) and leaves it untouched when it fails', async () => {
    const t = await insertTenant(database.pool);
    const doc = await insertDocument(database.pool, t, 'Wine list');
    const first = await index.replaceDocumentChunks(doc, MODEL, chunksOf(['Red wine from Rioja.', 'White wine from the Loire.']), [topicVector('wine', 0.1), topicVector('wine', 0.2)]);
    const before = await index.search({ tenantId: t, query: 'wine', queryVector: topicVector('wine'), model: MODEL, topK: 10 });
    expect(new Set(before.matches.map((m) => m.chunkId))).toEqual(new Set(first.chunkIds));

    const second = await index.replaceDocumentChunks(doc, 'test-topics-12', chunksOf(['Only sparkling wine now.']), [topicVector('wine', 0, 12)]);
    const rows = await database.pool.query('select id, embedding_model from kb_chunks where document_id = $1', [doc]);
    expect(rows.rows).toEqual([{ id: second.chunkIds[0], embedding_model: 'test-topics-12' }]);
    const oldModel = await index.search({ tenantId: t, query: 'wine', queryVector: topicVector('wine'), model: MODEL, topK: 10 });
    expect(oldModel.totalMatches).toBe(0);
    const after = await index.search({ tenantId: t, query: 'wine', queryVector: topicVector('wine', 0, 12), model: 'test-topics-12', topK: 10 });
    expect(after.matches.map((m) => m.excerpt)).toEqual(['Only sparkling wine now.']);
    const doc2 = await database.pool.query('select status, progress, chunk_count, embedding_model from kb_documents where id = $1', [doc]);
    expect(doc2.rows[0]).toEqual({ status: 'indexed', progress: 100, chunk_count: 1, embedding_model: 'test-topics-12' });

    // A failing write (a zero vector in the second batch position) rolls back: the previous set stays.
    await expect(
      index.replaceDocumentChunks(doc, 'test-topics-12', chunksOf(['a', 'b']), [topicVector('wine', 0, 12), new Float32Array(12)]),
    ).rejects.toMatchObject({ code: 'invalid_vectors' });
    const kept = await database.pool.query('select id from kb_chunks where document_id = $1', [doc]);
    expect(kept.rows.map((r) => r.id)).toEqual(second.chunkIds);
  });

  it('searches only indexed documents and forgets deleted ones', async () => {
    const t = await insertTenant(database.pool);
    const doc = await insertDocument(database.pool, t, 'Garden');
    await index.replaceDocumentChunks(doc, MODEL, chunksOf(['The garden seats forty.']), [topicVector('garden')]);
    const q = { tenantId: t, query: 'garden', queryVector: topicVector('garden'), model: MODEL };
    expect((await index.search(q)).totalMatches).toBe(1);
    await database.pool.query(`update kb_documents set status = 'processing', progress = 10 where id = $1`, [doc]);
    expect((await index.search(q)).totalMatches).toBe(0);
    await database.pool.query(`update kb_documents set status = 'indexed', progress = 100 where id = $1`, [doc]);
    expect((await index.search(q)).totalMatches).toBe(1);
    expect(await index.deleteDocument('ten_someoneelse', doc)).toBe(false);
    expect(await index.deleteDocument(t, doc)).toBe(true);
    expect((await index.search(q)).totalMatches).toBe(0);
    const left = await database.pool.query('select count(*)::int as n from kb_chunks where document_id = $1', [doc]);
    expect(left.rows[0].n).toBe(0);
  });

  it('sees documents indexed by another replica (its own cache, same database)', async () => {
    const replica = new KbIndex({ pool: database.pool, vectorSupport: support });
    const t = await insertTenant(database.pool);
    const doc = await insertDocument(database.pool, t, 'Staff');
    await index.replaceDocumentChunks(doc, MODEL, chunksOf(['Ask for Marta at the bar.']), [topicVector('staff')]);
    const q = { tenantId: t, query: 'who to ask', queryVector: topicVector('staff'), model: MODEL };
    expect((await replica.search(q)).matches[0]!.excerpt).toBe('Ask for Marta at the bar.');
    await index.replaceDocumentChunks(doc, MODEL, chunksOf(['Ask for Jonas at the door.']), [topicVector('staff')]);
    expect((await replica.search(q)).matches.map((m) => m.excerpt)).toEqual(['Ask for Jonas at the door.']);
    await index.deleteDocument(t, doc);
    expect((await replica.search(q)).totalMatches).toBe(0);
  });

  it('keeps the term counts equal to what the chunks hold through writes, reindexes and deletes', async () => {
    const t = await insertTenant(database.pool);
    const a = await insertDocument(database.pool, t, 'A');
    const b = await insertDocument(database.pool, t, 'B');
    await Promise.all([
      index.replaceDocumentChunks(a, MODEL, chunksOf(['Crate XK-4471 and crate XK-4472.', 'The terrace opens at noon.']), [topicVector('shipping'), topicVector('hours')]),
      index.replaceDocumentChunks(b, MODEL, chunksOf(['The terrace closes at ten.']), [topicVector('hours')]),
    ]);
    await index.replaceDocumentChunks(a, 'test-topics-12', chunksOf(['Crate XK-4471 moved.']), [topicVector('shipping', 0, 12)]);
    await index.replaceDocumentChunks(b, MODEL, chunksOf(['The terrace closes at ten.', 'Terrace heaters on request.']), [topicVector('hours'), topicVector('hours', 0.2)]);
    const stats = async () =>
      (
        await database.pool.query<{ m: string; l: string; n: number }>(
          `select embedding_model as m, lexeme as l, chunk_count as n from kb_term_stats where tenant_id = $1 and chunk_count > 0 order by 1, 2`,
          [t],
        )
      ).rows;
    const truth = async () =>
      (
        await database.pool.query<{ m: string; l: string; n: number }>(
          `select c.embedding_model as m, u.lexeme as l, count(*)::int as n from kb_chunks c cross join lateral unnest(c.search_vector) u
           where c.tenant_id = $1 group by 1, 2 order by 1, 2`,
          [t],
        )
      ).rows;
    expect(await stats()).toEqual(await truth());
    expect((await stats()).find((r) => r.m === MODEL && r.l === 'terrace')?.n).toBe(2);
    expect((await stats()).find((r) => r.m === 'test-topics-12' && r.l === 'xk4471')?.n).toBe(1);
    await index.deleteDocument(t, b);
    expect(await stats()).toEqual(await truth());
    expect((await stats()).some((r) => r.l === 'terrace')).toBe(false);
  });
});
