import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { OpenAiLlm } from '../../src/providers/openai/llm.js';
import { OpenAiSimulator, countPromptTokens } from '../../src/providers/openai/simulator.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import { withLlmRetry } from '../../src/providers/retry.js';
import type { LlmMessage, LlmRequest } from '../../src/providers/types.js';
import { collect, llmContract } from '../contracts/llm.contract.js';

let sim: OpenAiSimulator;

beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-openai-llm' });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

const llm = (opts: { apiKey?: string; timeoutMs?: number; maxTokensField?: 'max_tokens' } = {}): OpenAiLlm =>
  new OpenAiLlm({ apiKey: opts.apiKey ?? sim.apiKey, baseUrl: sim.url, timeoutMs: opts.timeoutMs, maxTokensField: opts.maxTokensField });
const user = (content: string): LlmRequest => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
const signal = (): AbortSignal => new AbortController().signal;
const lastBody = (): Record<string, unknown> => sim.requests.at(-1)?.body as Record<string, unknown>;

type WireMessage = { role: string; content: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string };

/** Reads a Chat Completions body back into our terms (reference/llm.md §1.1), independently of the adapter. */
function decodeOpenAiBody(body: unknown): LlmRequest {
  const b = body as Record<string, unknown> & { messages: WireMessage[]; tools?: { function: { name: string; description: string; parameters: Record<string, unknown> } }[] };
  const messages = b.messages.map((m): LlmMessage => {
    if (m.role === 'tool') return { role: 'tool', toolCallId: m.tool_call_id ?? '', content: m.content ?? '' };
    if (m.role === 'assistant') {
      const toolCalls = m.tool_calls?.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
      return toolCalls ? { role: 'assistant', content: m.content, toolCalls } : { role: 'assistant', content: m.content };
    }
    return { role: m.role as 'system' | 'user', content: m.content ?? '' };
  });
  return {
    model: b.model as string,
    messages,
    tools: b.tools?.map((t) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters })),
    temperature: b.temperature as number | undefined,
    maxTokens: (b.max_completion_tokens ?? b.max_tokens) as number | undefined,
    topP: b.top_p as number | undefined,
    frequencyPenalty: b.frequency_penalty as number | undefined,
    presencePenalty: b.presence_penalty as number | undefined,
  };
}

llmContract({
  name: 'openai',
  provider: (opts) => llm(opts),
  simulator: () => sim,
  lastWireRequest: () => decodeOpenAiBody(sim.requests.at(-1)?.body),
});

describe('OpenAiLlm on the wire', () => {
  it('sends a streaming body with include_usage, max_completion_tokens and OpenAI tool-call shapes', async () => {
    const { error } = await collect(
      llm().stream(
        {
          model: 'gpt-4o',
          messages: [
            { role: 'user', content: 'Slots?' },
            { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'check_slots', arguments: '{"day":"friday"}' }] },
            { role: 'tool', toolCallId: 'call_1', content: '[]' },
          ],
          tools: [{ name: 'check_slots', description: 'List free slots', parameters: { type: 'object' } }],
          maxTokens: 50,
        },
        signal(),
      ),
    );
    expect(error).toBeNull();
    const req = sim.requests.at(-1);
    expect(req?.headers.authorization).toBe(`Bearer ${sim.apiKey}`);
    expect(req?.path).toBe('/v1/chat/completions');
    expect(req?.body).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'Slots?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'check_slots', arguments: '{"day":"friday"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '[]' },
      ],
      tools: [{ type: 'function', function: { name: 'check_slots', description: 'List free slots', parameters: { type: 'object' } } }],
      max_completion_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('sends max_tokens instead when configured for an OpenAI-compatible server', async () => {
    await collect(llm({ maxTokensField: 'max_tokens' }).stream({ ...user('Hi'), maxTokens: 7 }, signal()));
    expect(lastBody().max_tokens).toBe(7);
    expect(lastBody()).not.toHaveProperty('max_completion_tokens');
  });

  it('accepts a baseUrl that already ends in /v1', async () => {
    const provider = new OpenAiLlm({ apiKey: sim.apiKey, baseUrl: `${sim.url}/v1/` });
    const { texts } = await collect(provider.stream(user('Hi'), signal()));
    expect(texts.join('')).toBe('You said: Hi.');
  });

  it('reports usage as the simulator counts it: prompt chars / 4 and one token per delta', async () => {
    const { events, texts } = await collect(llm().stream(user('Is the clinic open on Saturdays?'), signal()));
    const usage = events.find((e) => e.type === 'usage');
    expect(usage).toEqual({ type: 'usage', inputTokens: countPromptTokens(lastBody().messages as unknown[]), outputTokens: texts.length });
  });

  it('stops at maxTokens and reports finish reason length', async () => {
    const { events, texts } = await collect(llm().stream({ ...user('one two three four five'), maxTokens: 3 }, signal()));
    expect(texts.join('')).toBe('You said: one');
    expect(events.at(-1)).toEqual({ type: 'done', finishReason: 'length' });
  });

  it('answers a tool result with the default summary instead of calling the tool again', async () => {
    sim.addReply({ match: 'book', toolCall: { name: 'book', arguments: { day: 'friday' } } });
    const first = await collect(llm().stream(user('Book Friday'), signal()));
    const call = first.events.find((e) => e.type === 'tool-call');
    if (call?.type !== 'tool-call') throw new Error('expected a tool call');
    const { texts } = await collect(
      llm().stream(
        {
          model: 'gpt-4o-mini',
          messages: [
            { role: 'user', content: 'Book Friday' },
            { role: 'assistant', content: null, toolCalls: [call.call] },
            { role: 'tool', toolCallId: call.call.id, content: 'booked 10:00' },
          ],
        },
        signal(),
      ),
    );
    expect(texts.join('')).toBe('Done: booked 10:00');
  });

  it('rejects an out-of-range setting with a non-retryable llm.http_400 carrying the request id', async () => {
    const { error } = await collect(llm().stream({ ...user('Hi'), temperature: 5 }, signal()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'llm.http_400', status: 400, retryable: false, requestId: expect.stringMatching(/^req_/) });
  });

  it('carries the request id of a stream that failed after the headers', async () => {
    sim.setFaults({ dropAfterTokens: 1 });
    const { error } = await collect(llm().stream(user('Hi there'), signal()));
    expect(error).toMatchObject({ code: 'llm.connection_lost', requestId: expect.stringMatching(/^req_/) });
  });
});

describe('withLlmRetry over the OpenAI simulator', () => {
  it('retries a 500 and streams the second attempt', async () => {
    sim.setFaults({ failNext: { status: 500, count: 1 } });
    const onRetry = vi.fn();
    const { texts, error } = await collect(withLlmRetry(llm(), { baseDelayMs: 10, onRetry }).stream(user('Hello'), signal()));
    expect(error).toBeNull();
    expect(texts.join('')).toBe('You said: Hello.');
    expect(sim.requests.map((r) => r.status)).toEqual([500, 200]);
    expect(onRetry).toHaveBeenCalledOnce();
    expect(onRetry.mock.calls[0]?.[0]).toMatchObject({ code: 'llm.http_500' });
  });

  it('does not retry a failure that came after text was yielded', async () => {
    sim.setFaults({ dropAfterTokens: 2 });
    const onRetry = vi.fn();
    const { texts, error } = await collect(withLlmRetry(llm(), { baseDelayMs: 10, onRetry }).stream(user('Hello again'), signal()));
    expect(texts).toEqual(['You', ' said:']);
    expect(error).toMatchObject({ code: 'llm.connection_lost' });
    expect(sim.requests).toHaveLength(1);
    expect(onRetry).not.toHaveBeenCalled();
  });
});

/** Raw HTTP against the simulator, so the wire shapes are checked without the SDK's parser in between. */
describe('OpenAiSimulator wire format', () => {
  const post = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${sim.apiKey}` }) =>
    fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const sseData = (text: string): string[] =>
    text
      .split('\n\n')
      .filter((e) => e !== '')
      .map((e) => {
        expect(e.startsWith('data: ')).toBe(true);
        return e.slice('data: '.length);
      });

  it('streams a role chunk, content deltas, a finish chunk, a usage chunk and [DONE]', async () => {
    const res = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi you' }], stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = sseData(await res.text());
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { id: string; object: string; model: string; choices: { delta: unknown; finish_reason: string | null }[]; usage: unknown });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-4o-mini')).toBe(true);
    expect(chunks[0]?.choices[0]).toMatchObject({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null });
    expect(chunks.slice(1, 4).map((c) => c.choices[0]?.delta)).toEqual([{ content: 'You' }, { content: ' said:' }, { content: ' Hi' }]);
    expect(chunks.at(-2)?.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 } });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('leaves usage out entirely when include_usage is not asked for', async () => {
    const data = sseData(await (await post({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true })).text());
    expect(data.slice(0, -1).every((d) => !('usage' in (JSON.parse(d) as object)))).toBe(true);
  });

  it('splits some events across TCP writes so parsers must buffer', async () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'a b c d e f g h' }], stream: true });
    const pieces = await new Promise<string[]>((resolve, reject) => {
      const req = httpRequest(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${sim.apiKey}`, 'content-type': 'application/json' } }, (res) => {
        const got: string[] = [];
        res.setEncoding('utf8');
        res.on('data', (d: string) => got.push(d));
        res.on('end', () => resolve(got));
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(pieces.join('').endsWith('data: [DONE]\n\n')).toBe(true);
    expect(pieces.some((p) => !p.endsWith('\n\n'))).toBe(true);
  });

  it('answers a non-streaming request with one chat.completion object', async () => {
    const res = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    expect(await res.json()).toMatchObject({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'You said: Hi.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
    });
  });

  it("rejects a missing or wrong key with 401 and OpenAI's error JSON", async () => {
    const missing = await post({ model: 'm', messages: [] }, {});
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null } });
    const wrong = await post({ model: 'm', messages: [] }, { authorization: 'Bearer sk-nope-12345678' });
    expect(await wrong.json()).toMatchObject({ error: { code: 'invalid_api_key', message: expect.stringContaining('sk-***5678') } });
  });

  it('rejects invalid bodies with 400 naming the param', async () => {
    const cases: [unknown, string][] = [
      [{ messages: [{ role: 'user', content: 'x' }] }, 'model'],
      [{ model: 'm' }, 'messages'],
      [{ model: 'm', messages: [] }, 'messages'],
      [{ model: 'm', messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
      [{ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_x', content: 'y' }] }, 'messages[1].role'],
      [{ model: 'm', messages: [{ role: 'user', content: 'x' }], top_p: 1.5 }, 'top_p'],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    }
  });

  it('sends retry-after with a scripted 429', async () => {
    sim.setFaults({ failNext: { status: 429, count: 1 } });
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
  });

  it('is controlled over HTTP: health, replies (string and regex), faults and reset', async () => {
    const control = (path: string, body?: unknown) => fetch(`${sim.url}/__sim/${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    expect(await (await control('health')).json()).toEqual({ status: 'ok' });
    await control('replies', [{ match: { regex: '^price', flags: 'i' }, reply: 'Ten dollars.' }, { match: 'weather', reply: 'Sunny.' }]);
    const bad = await control('replies', [{ match: 1, reply: 'x' }]);
    expect(bad.status).toBe(400);
    const ask = async (q: string) => (await collect(llm().stream(user(q), signal()))).texts.join('');
    expect(await ask('Price of a cleaning?')).toBe('Ten dollars.');
    expect(await ask('How is the weather?')).toBe('Sunny.');
    expect(await (await control('faults', { failNext: { status: 503, count: 1 } })).json()).toMatchObject({ failNext: { status: 503, count: 1 } });
    expect((await collect(llm().stream(user('x'), signal()))).error).toMatchObject({ code: 'llm.http_503', retryable: true });
    await control('reset', {});
    expect(await ask('Price of a cleaning?')).toBe('You said: Price of a cleaning?.');
    expect(sim.requests).toHaveLength(1);
  });
});
