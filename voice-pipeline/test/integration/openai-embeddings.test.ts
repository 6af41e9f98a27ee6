/**
 * `POST /v1/embeddings` on the OpenAI simulator over real HTTP (reference/llm.md §2): the
 * response shape, the API's validation errors, base64 encoding, `dimensions`, the fault
 * controls, and vectors that put paraphrases closer than unrelated texts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hashEmbedding } from '../../src/providers/openai/hash-embedding.js';
import { OpenAiSimulator } from '../../src/providers/openai/simulator.js';

let sim: OpenAiSimulator;

beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-embeddings' });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.reset();
  sim.setFaults({ firstTokenDelayMs: 0 });
});

interface EmbeddingsBody {
  object: string;
  data: { object: string; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function post(body: unknown, opts: { key?: string | null; signal?: AbortSignal } = {}): Promise<{ status: number; json: unknown; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = opts.key === undefined ? sim.apiKey : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${sim.url}/v1/embeddings`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body), signal: opts.signal ?? null });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

const vec = (e: number[] | string): Float32Array => {
  if (typeof e !== 'string') return Float32Array.from(e);
  const buf = Buffer.from(e, 'base64');
  return Float32Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
};
const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * (b[i] as number), 0);
const norm = (a: Float32Array): number => Math.sqrt(dot(a, a));

describe('OpenAI simulator /v1/embeddings', () => {
  it('answers data[{object, index, embedding}], model and usage, one unit vector per input in order', async () => {
    const input = ['refund policy', 'opening hours', 'parking behind the building'];
    const { status, json, headers } = await post({ model: 'text-embedding-3-small', input, encoding_format: 'float' });
    expect(status).toBe(200);
    expect(headers.get('x-request-id')).toMatch(/^req_/);
    const body = json as EmbeddingsBody;
    expect(body.object).toBe('list');
    expect(body.model).toBe('text-embedding-3-small');
    expect(body.data.map((d) => [d.object, d.index])).toEqual(input.map((_, i) => ['embedding', i]));
    for (const [i, d] of body.data.entries()) {
      const v = vec(d.embedding);
      expect(v.length).toBe(1536); // text-embedding-3-small's native size
      expect(norm(v)).toBeCloseTo(1, 5);
      // The same algorithm as the local embedder, at the requested size.
      expect(dot(v, hashEmbedding(input[i] as string, 1536))).toBeCloseTo(1, 5);
    }
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens);
    expect(sim.requests.at(-1)).toMatchObject({ path: '/v1/embeddings', status: 200, completed: true });
  });

  it('accepts a single string, token arrays, and models it does not know (384 dimensions)', async () => {
    const single = (await post({ model: 'bge-small-en-v1.5', input: 'hello there' })).json as EmbeddingsBody;
    expect(single.data).toHaveLength(1);
    expect(vec(single.data[0]?.embedding ?? []).length).toBe(384);
    const tokens = await post({ model: 'text-embedding-3-small', input: [[9906, 1070], [15339]] });
    expect(tokens.status).toBe(200);
    expect((tokens.json as EmbeddingsBody).data).toHaveLength(2);
  });

  it('honours dimensions on text-embedding-3 models and refuses it on ada-002', async () => {
    const small = (await post({ model: 'text-embedding-3-small', input: ['abc'], dimensions: 256 })).json as EmbeddingsBody;
    expect(vec(small.data[0]?.embedding ?? []).length).toBe(256);
    const ada = await post({ model: 'text-embedding-ada-002', input: ['abc'], dimensions: 256 });
    expect(ada.status).toBe(400);
    expect((ada.json as ErrorBody).error.message).toMatch(/does not support specifying dimensions/);
    const tooMany = await post({ model: 'text-embedding-3-small', input: ['abc'], dimensions: 4000 });
    expect(tooMany.status).toBe(400);
    expect((tooMany.json as ErrorBody).error).toMatchObject({ param: 'dimensions', type: 'invalid_request_error' });
  });

  it('encodes base64 as little-endian float32, equal to the float answer', async () => {
    const input = ['What time do you open?'];
    const floats = (await post({ model: 'text-embedding-3-small', input })).json as EmbeddingsBody;
    const b64 = (await post({ model: 'text-embedding-3-small', input, encoding_format: 'base64' })).json as EmbeddingsBody;
    expect(typeof b64.data[0]?.embedding).toBe('string');
    expect(Array.from(vec(b64.data[0]?.embedding ?? ''))).toEqual(Array.from(vec(floats.data[0]?.embedding ?? [])));
  });

  it.each([
    [{ input: ['x'] }, 'model', /model parameter/],
    [{ model: 'text-embedding-3-small' }, 'input', /Missing required parameter: 'input'/],
    [{ model: 'text-embedding-3-small', input: '' }, 'input', /'\$\.input' is invalid/],
    [{ model: 'text-embedding-3-small', input: [] }, 'input', /'\$\.input' is invalid/],
    [{ model: 'text-embedding-3-small', input: ['ok', 3] }, 'input', /'\$\.input' is invalid/],
    [{ model: 'text-embedding-3-small', input: Array.from({ length: 2049 }, () => 'x') }, 'input', /maximum length 2048/],
    [{ model: 'text-embedding-3-small', input: ['x'], encoding_format: 'int8' }, 'encoding_format', /Supported values are: 'float' and 'base64'/],
    [{ model: 'text-embedding-3-small', input: ['word '.repeat(9000)] }, 'input', /maximum context length is 8192 tokens/],
  ])('rejects a bad body with a 400 in OpenAI error shape (%#)', async (body, param, message) => {
    const { status, json } = await post(body);
    expect(status).toBe(400);
    const e = (json as ErrorBody).error;
    expect(e.type).toBe('invalid_request_error');
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
  });

  it('requires the Bearer key and a JSON body', async () => {
    expect((await post({ model: 'm', input: 'x' }, { key: null })).status).toBe(401);
    const wrong = await post({ model: 'm', input: 'x' }, { key: 'sk-wrong-key-123' });
    expect(wrong.status).toBe(401);
    expect((wrong.json as ErrorBody).error.code).toBe('invalid_api_key');
    expect((await post('{not json')).status).toBe(400);
  });

  it('applies failNext (with 429 Retry-After), latency and hang like chat requests', async () => {
    sim.setFaults({ failNext: { status: 429, count: 1 } });
    const limited = await post({ model: 'text-embedding-3-small', input: ['x'] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((limited.json as ErrorBody).error.code).toBe('rate_limit_exceeded');
    expect((await post({ model: 'text-embedding-3-small', input: ['x'] })).status).toBe(200);

    sim.setFaults({ firstTokenDelayMs: 250 });
    const started = performance.now();
    expect((await post({ model: 'text-embedding-3-small', input: ['x'] })).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);

    sim.setFaults({ hang: true, firstTokenDelayMs: 0 });
    await expect(post({ model: 'text-embedding-3-small', input: ['x'] }, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    await expect.poll(() => sim.requests.at(-1)?.clientDisconnected).toBe(true);
    expect(sim.requests.at(-1)?.status).toBeNull();
  });

  it('forces the vector size with the embeddingDimensions fault (also through /__sim/faults)', async () => {
    const res = await fetch(`${sim.url}/__sim/faults`, { method: 'POST', body: JSON.stringify({ embeddingDimensions: 64 }) });
    expect(res.status).toBe(200);
    const body = (await post({ model: 'text-embedding-3-small', input: ['a', 'b'] })).json as EmbeddingsBody;
    expect(body.data.map((d) => vec(d.embedding).length)).toEqual([64, 64]);
  });

  it('puts paraphrases closer than unrelated texts', async () => {
    const pairs = [
      ['What are your opening hours?', 'What time do you open in the morning?', 'We accept cash and all major credit cards.'],
      ['How much does a haircut cost?', 'Haircut prices start at 25 euros.', 'Dogs are welcome on the terrace.'],
      ['I would like to make a booking', 'Reservations can be made online or by phone.', 'Our refund policy covers faulty goods.'],
      ['Can I get my money back?', 'Refunds are issued within 14 days of purchase.', 'Parking is available behind the building.'],
    ];
    const input = pairs.flat();
    const body = (await post({ model: 'text-embedding-3-small', input })).json as EmbeddingsBody;
    const v = body.data.map((d) => vec(d.embedding));
    for (let p = 0; p < pairs.length; p++) {
      const [q, para, other] = [v[p * 3], v[p * 3 + 1], v[p * 3 + 2]] as [Float32Array, Float32Array, Float32Array];
      expect(dot(q, para), pairs[p]?.join(' / ')).toBeGreaterThan(dot(q, other) + 0.15);
    }
  });
});
