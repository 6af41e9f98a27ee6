/**
 * OpenAiCompatibleEmbedder against the real OpenAI simulator over HTTP: batching as seen in
 * the simulator's request log, retries (500, 429 with Retry-After, network), errors that are
 * not retried, dimension checks, and paraphrase similarity through the wire.
 */
import { createServer } from 'node:net';
import { OpenAiSimulator } from '@vap/voice-pipeline/simulators';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chunkSections } from '../../src/modules/knowledge-base/chunking/chunker.js';
import { LocalEmbedder } from '../../src/modules/knowledge-base/embedding/local-embedder.js';
import { EmbeddingError, OpenAiCompatibleEmbedder, embeddingsUrl, parseRetryAfter, type OpenAiCompatibleEmbedderOptions } from '../../src/modules/knowledge-base/embedding/openai-compatible-embedder.js';
import { cosine } from '../../src/modules/knowledge-base/embedding/vectors.js';

let sim: OpenAiSimulator;

beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-kb-embeddings' });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.reset();
  sim.setFaults({ firstTokenDelayMs: 0 });
});

/** Sleeps recorded instead of waited, so backoff and Retry-After are visible without slowing the test. */
function client(opts: Partial<OpenAiCompatibleEmbedderOptions> = {}): { embedder: OpenAiCompatibleEmbedder; sleeps: number[] } {
  const sleeps: number[] = [];
  const embedder = new OpenAiCompatibleEmbedder({
    baseUrl: sim.url,
    apiKey: sim.apiKey,
    model: 'text-embedding-3-small',
    maxRetries: 3,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...opts,
  });
  return { embedder, sleeps };
}

const embeddingRequests = () => sim.requests.filter((r) => r.path === '/v1/embeddings');
const bodyOf = (i: number) => embeddingRequests()[i]?.body as { model: string; input: string[]; encoding_format: string; dimensions?: number };

describe('OpenAiCompatibleEmbedder', () => {
  it('sends batches of batchSize with the model, float encoding and Bearer key, and returns vectors in input order', async () => {
    const { embedder } = client({ batchSize: 64 });
    const texts = Array.from({ length: 150 }, (_, i) => `Passage ${i} about the harbour bistro`);
    const vectors = await embedder.embed(texts, 'document');
    expect(vectors).toHaveLength(150);
    expect(embeddingRequests().map((_, i) => bodyOf(i).input.length)).toEqual([64, 64, 22]);
    expect(bodyOf(0)).toMatchObject({ model: 'text-embedding-3-small', encoding_format: 'float' });
    expect(bodyOf(0).dimensions).toBeUndefined();
    expect(bodyOf(2).input[0]).toBe('Passage 128 about the harbour bistro');
    expect(embeddingRequests()[0]?.headers.authorization).toBe(`Bearer ${sim.apiKey}`);
    expect(embedder.dimensions).toBe(1536);
    // In order: each vector is the one a single-text request gets for the same text.
    const [again] = await embedder.embed([texts[100] as string], 'document');
    expect(cosine(again as Float32Array, vectors[100] as Float32Array)).toBeCloseTo(1, 5);
    expect(cosine(again as Float32Array, vectors[99] as Float32Array)).toBeLessThan(0.99);
  });

  it('gives the same vectors as the local embedder for a 384-dimension model, normalised', async () => {
    const { embedder } = client({ model: 'sim-local-compatible' });
    const texts = ['What time do you open?', 'Refunds within 14 days'];
    const remote = await embedder.embed(texts, 'query');
    const local = await new LocalEmbedder().embed(texts, 'query');
    expect(embedder.dimensions).toBe(384);
    for (let i = 0; i < texts.length; i++) {
      const v = remote[i] as Float32Array;
      expect(Math.sqrt(v.reduce((s, x) => s + x * x, 0))).toBeCloseTo(1, 5);
      expect(cosine(v, local[i] as Float32Array)).toBeCloseTo(1, 5);
    }
  });

  it('puts paraphrases closer than unrelated texts through the simulator', async () => {
    const { embedder } = client();
    const [q, para, other] = (await embedder.embed(['What are your opening hours?', 'We open at 9 and close at 17.', 'Refunds are issued within 14 days.'], 'document')) as [Float32Array, Float32Array, Float32Array];
    expect(cosine(q, para)).toBeGreaterThan(cosine(q, other) + 0.2);
  });

  it('retries a 500 with backoff and succeeds', async () => {
    sim.setFaults({ failNext: { status: 500, count: 2 } });
    const { embedder, sleeps } = client({ retryBaseMs: 100 });
    const vectors = await embedder.embed(['hello'], 'document');
    expect(vectors).toHaveLength(1);
    expect(embeddingRequests().map((r) => r.status)).toEqual([500, 500, 200]);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(sleeps[0]).toBeLessThanOrEqual(100);
    expect(sleeps[1]).toBeGreaterThanOrEqual(100);
    expect(sleeps[1]).toBeLessThanOrEqual(200);
  });

  it('waits what Retry-After says on a 429, really, then succeeds', async () => {
    sim.setFaults({ failNext: { status: 429, count: 1 } });
    const embedder = new OpenAiCompatibleEmbedder({ baseUrl: sim.url, apiKey: sim.apiKey, model: 'text-embedding-3-small', retryBaseMs: 1 });
    const started = performance.now();
    await embedder.embed(['hello'], 'document');
    // The simulator answers 429 with retry-after: 1 (second), which beats the 1 ms backoff.
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(embeddingRequests().map((r) => r.status)).toEqual([429, 200]);
  });

  it('gives up after maxRetries with the status and the server message', async () => {
    sim.setFaults({ failNext: { status: 503, count: 10 } });
    const { embedder } = client({ maxRetries: 2 });
    const err = await embedder.embed(['hello'], 'document').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err).toMatchObject({ code: 'http', status: 503, retryable: true });
    expect((err as Error).message).toMatch(/answered 503: The engine is currently overloaded/);
    expect(embeddingRequests()).toHaveLength(3);
  });

  it('does not retry a 400 or a 401, and says why', async () => {
    const { embedder } = client({ model: 'text-embedding-ada-002', dimensions: 256, sendDimensions: true });
    const err = await embedder.embed(['hello'], 'document').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'http', status: 400, retryable: false });
    expect((err as Error).message).toMatch(/does not support specifying dimensions/);
    expect(embeddingRequests()).toHaveLength(1);

    const wrongKey = client({ apiKey: 'sk-wrong-key-0000' }).embedder;
    const denied = await wrongKey.embed(['hello'], 'document').catch((e: unknown) => e);
    expect(denied).toMatchObject({ code: 'http', status: 401, retryable: false });
    expect((denied as Error).message).not.toContain('sk-wrong-key-0000');
    expect(embeddingRequests()).toHaveLength(2);
  });

  it('sends dimensions for text-embedding-3 when configured, and gets vectors of that size', async () => {
    const { embedder } = client({ dimensions: 256 });
    const [v] = await embedder.embed(['hello'], 'document');
    expect(bodyOf(0).dimensions).toBe(256);
    expect(v?.length).toBe(256);
  });

  it('fails with dimension_mismatch when the server changes vector size between batches', async () => {
    const { embedder } = client({ model: 'some-self-hosted-model' });
    await embedder.embed(['first batch'], 'document');
    expect(embedder.dimensions).toBe(384);
    sim.setFaults({ embeddingDimensions: 768 });
    const err = await embedder.embed(['second batch'], 'document').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'dimension_mismatch', retryable: false });
    expect((err as Error).message).toMatch(/768-dimension vector .* where 384 were expected/);
  });

  it('fails with dimension_mismatch when the server ignores the configured size', async () => {
    sim.setFaults({ embeddingDimensions: 512 });
    const { embedder } = client({ model: 'BAAI/bge-small-en-v1.5' });
    expect(embedder.dimensions).toBe(384);
    await expect(embedder.embed(['hello'], 'document')).rejects.toMatchObject({ code: 'dimension_mismatch' });
  });

  it('retries network errors and then reports them', async () => {
    const port = await closedPort();
    const { embedder, sleeps } = client({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 2 });
    const err = await embedder.embed(['hello'], 'document').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'network', retryable: true });
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
    expect(sleeps).toHaveLength(2);
  });

  it('times out a server that never answers', async () => {
    sim.setFaults({ hang: true });
    const { embedder } = client({ timeoutMs: 200, maxRetries: 1 });
    await expect(embedder.embed(['hello'], 'document')).rejects.toMatchObject({ code: 'timeout' });
    expect(embeddingRequests()).toHaveLength(2);
  });

  it('adds query and document prefixes for asymmetric models, sends no request for no texts', async () => {
    const { embedder } = client({ model: 'custom-asymmetric-embedder', queryPrefix: 'search_query: ', documentPrefix: 'search_document: ' });
    expect(await embedder.embed([], 'query')).toEqual([]);
    expect(embeddingRequests()).toHaveLength(0);
    await embedder.embed(['when do you open'], 'query');
    await embedder.embed(['We open at nine.', ''], 'document');
    expect(bodyOf(0).input).toEqual(['search_query: when do you open']);
    expect(bodyOf(1).input).toEqual(['search_document: We open at nine.', 'search_document: ']);
  });

  it('learns the size from the first answer when the model is unknown', async () => {
    const { embedder } = client({ model: 'my-custom-embedder' });
    expect(() => embedder.dimensions).toThrow(/not known yet/);
    expect(await embedder.resolveDimensions()).toBe(384);
  });
});

describe('chunk, embed through the simulator, search', () => {
  it('ranks the chunk that answers a paraphrased question first', async () => {
    const topics: [context: string, text: string][] = [
      ['Opening hours', 'The bistro is open from Tuesday to Sunday. On weekdays we open at noon and close at 23:00; on Saturday and Sunday the kitchen opens at 10:00 for brunch.'],
      ['Refunds', 'Vouchers that were not used can be refunded within 30 days. Refunds go back to the card used for payment and take five working days to appear.'],
      ['Parking', 'Guests can leave their car in the municipal garage behind the harbour office. The first three hours are free with a stamp from the bistro.'],
      ['Pets', 'Dogs are welcome on the terrace and in the bar area, but not in the main dining room. Water bowls are available at the entrance.'],
      ['Payments', 'We accept cash, debit and credit cards, and contactless payment. Cheques are not accepted.'],
    ];
    const chunks = chunkSections(topics.map(([context, text]) => ({ text, context, pageNumber: null })), { targetTokens: 40, overlapTokens: 0, maxTokens: 60 });
    expect(chunks.map((c) => c.context)).toEqual(topics.map(([context]) => context));
    const { embedder } = client({ batchSize: 2 });
    const vectors = await embedder.embed(chunks.map((c) => c.text), 'document');
    expect(embeddingRequests()).toHaveLength(3);
    const questions: [string, string][] = [
      ['What time do you open at the weekend?', 'Opening hours'],
      ['Can I get my money back for a gift voucher?', 'Refunds'],
      ['Where can I park?', 'Parking'],
      ['Can I bring my dog?', 'Pets'],
      ['Do you take credit cards?', 'Payments'],
    ];
    const queries = await embedder.embed(questions.map(([q]) => q), 'query');
    questions.forEach(([question, expected], i) => {
      const scores = vectors.map((v) => cosine(queries[i] as Float32Array, v));
      expect(chunks[scores.indexOf(Math.max(...scores))]?.context, question).toBe(expected);
    });
  });
});

describe('embedding endpoint details', () => {
  it('appends /v1/embeddings, or /embeddings when the base URL ends with /v1', async () => {
    expect(embeddingsUrl('https://api.openai.com')).toBe('https://api.openai.com/v1/embeddings');
    expect(embeddingsUrl('http://ollama:11434/v1/')).toBe('http://ollama:11434/v1/embeddings');
    expect(embeddingsUrl('http://tei:8080/')).toBe('http://tei:8080/v1/embeddings');
    const { embedder } = client({ baseUrl: `${sim.url}/v1` });
    await embedder.embed(['hello'], 'document');
    expect(embeddingRequests()[0]?.path).toBe('/v1/embeddings');
  });

  it('reads retry-after-ms, Retry-After seconds and dates, and ignores waits over two minutes', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250' }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
    expect(parseRetryAfter(new Headers({ 'retry-after': '3600' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    // Junk V8 would read as a date in 2001 (a wait of 0): the backoff applies instead.
    expect(parseRetryAfter(new Headers({ 'retry-after': '-1' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
