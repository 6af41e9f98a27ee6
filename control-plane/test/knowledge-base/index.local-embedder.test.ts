import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { LocalEmbedder } from '../../src/modules/knowledge-base/embedding/local-embedder.js';
import { KbIndex } from '../../src/modules/knowledge-base/index/kb-index.js';
import { detectVectorSupport } from '../../src/modules/knowledge-base/index/vector-support.js';
import { chunksOf, insertDocument, insertTenant } from './index-fixtures.js';

/** A small restaurant knowledge base: a tenant's few documents, where stop words are not yet common. */
const DOCUMENTS: Record<string, string[]> = {
  'Visiting us': [
    'What time do you open? Every day from eleven until late.',
    'Our address is 12 Harbour Street, next to the ferry.',
    'Parking is available in the garage behind the hotel.',
    'Pets are welcome on the terrace.',
  ],
  Bookings: [
    'Reservations for Friday can be made by phone.',
    'Cancellations are free up to 24 hours before your booking.',
    'Refunds are issued within 14 days of purchase.',
  ],
  'Service desk': ['If the display shows E-4471, restart the unit.', 'If the display shows E-9012, call support.', 'We accept cash and credit cards.'],
};

describe('hybrid search with the local embedder (no network), on the run Postgres', () => {
  const embedder = new LocalEmbedder();
  let database: Database;
  let index: KbIndex;
  let tenantId: string;

  beforeAll(async () => {
    database = openDatabase(inject('databaseUrl'), 4);
    index = new KbIndex({ pool: database.pool, vectorSupport: await detectVectorSupport(database.pool) });
    tenantId = await insertTenant(database.pool);
    for (const [name, texts] of Object.entries(DOCUMENTS)) {
      const id = await insertDocument(database.pool, tenantId, name);
      await index.replaceDocumentChunks(id, embedder.model, chunksOf(texts), await embedder.embed(texts, 'document'));
    }
  });
  afterAll(async () => database.close());

  const search = async (query: string) => {
    const [queryVector] = await embedder.embed([query], 'query');
    return index.search({ tenantId, query, queryVector: queryVector!, model: embedder.model, topK: 3 });
  };

  it.each([
    ['I want my money back', 'Refunds are issued within 14 days'],
    ['Do you allow dogs?', 'Pets are welcome'],
    ['Is there somewhere to park my car?', 'Parking is available'],
    ['Where are you located?', 'Our address is 12 Harbour Street'],
    ['How do I cancel my reservation?', 'Cancellations are free'],
  ])('answers "%s" with the passage that means it', async (query, expected) => {
    const r = await search(query);
    expect(r.matches[0]!.excerpt).toContain(expected);
  });

  it('finds the passage with an error code, not the one with another code', async () => {
    const r = await search('the screen says E-4471');
    expect(r.matches[0]!.excerpt).toContain('E-4471');
    expect(r.matches[0]!.textShare).toBeGreaterThan(0.5);
    const other = r.matches.find((m) => m.excerpt.includes('E-9012'));
    if (other) expect(other.score).toBeLessThan(r.matches[0]!.score);
  });
});
