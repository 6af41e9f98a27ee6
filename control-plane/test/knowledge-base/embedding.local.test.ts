import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createEmbedder } from '../../src/modules/knowledge-base/embedding/create-embedder.js';
import { LOCAL_EMBED_SLICE, LOCAL_EMBEDDING_MODEL, LocalEmbedder } from '../../src/modules/knowledge-base/embedding/local-embedder.js';
import { OpenAiCompatibleEmbedder } from '../../src/modules/knowledge-base/embedding/openai-compatible-embedder.js';
import { cosine } from '../../src/modules/knowledge-base/embedding/vectors.js';

const embedder = new LocalEmbedder();
const one = async (text: string): Promise<Float32Array> => (await embedder.embed([text], 'query'))[0] as Float32Array;
const norm = (v: Float32Array): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

/** [query, paraphrase that should match, unrelated text]. */
const TRIPLES: [string, string, string][] = [
  ['What are your opening hours?', 'What time do you open?', 'We accept cash and credit cards.'],
  ['opening hours on weekends', 'On Saturday and Sunday we open at ten.', 'Refunds take five working days.'],
  ['How much does it cost?', 'Our prices start at 20 euros per person.', 'The terrace has heaters in winter.'],
  ['Can I make a booking for Friday?', 'Reservations for Friday can be made by phone.', 'Our chef trained in Lyon.'],
  ['I want my money back', 'Refunds are issued within 14 days of purchase.', 'Free parking behind the building.'],
  ['Where are you located?', 'Our address is 12 Harbour Street, next to the ferry.', 'Vegan dishes are marked with a V.'],
  ['Do you allow dogs?', 'Pets are welcome on the terrace.', 'Booking is recommended at weekends.'],
  ['Is there somewhere to park my car?', 'Parking is available in the garage behind the hotel.', 'Breakfast is served until ten.'],
  ['How do I cancel my reservation?', 'Cancellations are free up to 24 hours before your booking.', 'The museum shop sells postcards.'],
];

describe('LocalEmbedder', () => {
  it('is the local model at 384 dimensions', () => {
    expect(embedder.model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(embedder.model).toBe('local-hash-384-v1');
    expect(embedder.dimensions).toBe(384);
  });

  it.each(TRIPLES)('puts a paraphrase closer than an unrelated text: %s', async (query, paraphrase, unrelated) => {
    const [q, p, u] = (await embedder.embed([query, paraphrase, unrelated], 'document')) as [Float32Array, Float32Array, Float32Array];
    expect(cosine(q, p)).toBeGreaterThan(0.25);
    expect(cosine(q, p)).toBeGreaterThan(cosine(q, u) + 0.2);
  });

  it('ranks the right passage first among all candidates for each query', async () => {
    const passages = await embedder.embed(TRIPLES.map((t) => t[1]), 'document');
    for (const [i, [query]] of TRIPLES.entries()) {
      const q = await one(query);
      const scores = passages.map((p) => cosine(q, p));
      expect(scores.indexOf(Math.max(...scores)), query).toBe(i);
    }
  });

  it('finds exact codes and numbers by their shared tokens', async () => {
    const [code, sameCode, otherCode] = (await embedder.embed(['error code E-4471', 'If the display shows E-4471, restart the unit.', 'If the display shows E-9012, call support.'], 'document')) as [Float32Array, Float32Array, Float32Array];
    expect(cosine(code, sameCode)).toBeGreaterThan(cosine(code, otherCode));
  });

  it('is deterministic: the same text gives the same vector in any order, batch or instance', async () => {
    const texts = ['What time do you open?', 'Refunds within 14 days.', 'ümlaut Crème brûlée', ''];
    const a = await embedder.embed(texts, 'document');
    const b = await new LocalEmbedder().embed([...texts].reverse(), 'query');
    b.reverse();
    for (let i = 0; i < texts.length; i++) expect(Array.from(a[i] as Float32Array)).toEqual(Array.from(b[i] as Float32Array));
  });

  it('returns unit vectors, also for empty, punctuation-only and very long texts', async () => {
    const vectors = await embedder.embed(['', '?!…', 'a', 'word '.repeat(20_000), 'Crème brûlée à la carte'], 'document');
    for (const v of vectors) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(384);
      expect(norm(v)).toBeCloseTo(1, 5);
      expect(v.every(Number.isFinite)).toBe(true);
    }
  });

  it('yields to the event loop between slices of a large batch', async () => {
    const order: string[] = [];
    setImmediate(() => order.push('immediate'));
    const vectors = await embedder.embed(Array.from({ length: 3 * LOCAL_EMBED_SLICE }, (_, i) => `text number ${i}`), 'document');
    order.push('embedded');
    expect(vectors).toHaveLength(3 * LOCAL_EMBED_SLICE);
    expect(order).toEqual(['immediate', 'embedded']);
  });

  it('folds case and accents', async () => {
    expect(cosine(await one('CRÈME BRÛLÉE'), await one('creme brulee'))).toBeCloseTo(1, 5);
  });
});

describe('createEmbedder', () => {
  it('picks the local embedder without a base URL', () => {
    expect(createEmbedder({ baseUrl: undefined, apiKey: undefined, model: undefined })).toBeInstanceOf(LocalEmbedder);
    expect(createEmbedder({ baseUrl: undefined, apiKey: undefined, model: 'local-hash-384-v1' })).toBeInstanceOf(LocalEmbedder);
  });

  it('picks the OpenAI-compatible client with a base URL', () => {
    const e = createEmbedder({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'text-embedding-3-small' });
    expect(e).toBeInstanceOf(OpenAiCompatibleEmbedder);
    expect(e.model).toBe('text-embedding-3-small');
    expect(e.dimensions).toBe(1536);
  });

  it('refuses a remote model name without a base URL, and a base URL without a model', () => {
    expect(() => createEmbedder({ baseUrl: undefined, apiKey: undefined, model: 'text-embedding-3-small' })).toThrow(/KB_EMBEDDING_BASE_URL/);
    expect(() => createEmbedder({ baseUrl: 'http://127.0.0.1:9', apiKey: undefined, model: undefined })).toThrow(/KB_EMBEDDING_MODEL/);
  });

  it('reads KB_EMBEDDING_* from the environment, requiring a model with a base URL', () => {
    expect(loadConfig({}).knowledgeBase.embedding).toEqual({ baseUrl: undefined, apiKey: undefined, model: undefined });
    const remote = loadConfig({ KB_EMBEDDING_BASE_URL: 'http://tei:8080', KB_EMBEDDING_API_KEY: 'secret', KB_EMBEDDING_MODEL: 'BAAI/bge-small-en-v1.5' }).knowledgeBase.embedding;
    expect(remote).toEqual({ baseUrl: 'http://tei:8080', apiKey: 'secret', model: 'BAAI/bge-small-en-v1.5' });
    expect(createEmbedder(remote).dimensions).toBe(384);
    expect(() => loadConfig({ KB_EMBEDDING_BASE_URL: 'http://tei:8080' })).toThrow(ConfigError);
    expect(() => loadConfig({ KB_EMBEDDING_BASE_URL: 'ftp://tei' })).toThrow(/KB_EMBEDDING_BASE_URL/);
  });
});
