/**
 * Structured output (`response_format: json_schema`) between the real OpenAI adapter and
 * the simulator: the wire body, the API's checks on the schema, the derived analysis and
 * the one-off scripted replies that let tests force a reply breaking the schema.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAiLlm } from '../../src/providers/openai/llm.js';
import { OpenAiSimulator } from '../../src/providers/openai/simulator.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { LlmRequest } from '../../src/providers/types.js';
import { collect } from '../contracts/llm.contract.js';

let sim: OpenAiSimulator;
let llm: OpenAiLlm;

beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-structured' });
  llm = new OpenAiLlm({ apiKey: sim.apiKey, baseUrl: sim.url });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

const strict = (properties: Record<string, unknown>) => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false });
const ask = async (request: Partial<LlmRequest>) => {
  const { texts, error } = await collect(llm.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }], ...request }, new AbortController().signal));
  return { text: texts.join(''), error };
};
const lastBody = () => sim.requests.at(-1)?.body as Record<string, unknown>;

describe('structured output on the wire', () => {
  it('sends response_format as a strict json_schema and gets a value of the schema back', async () => {
    const schema = strict({ colour: { type: 'string', enum: ['red', 'green'] }, count: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } });
    const { text, error } = await ask({ responseFormat: { name: 'paint_order', schema } });
    expect(error).toBeNull();
    expect(lastBody().response_format).toEqual({ type: 'json_schema', json_schema: { name: 'paint_order', schema, strict: true } });
    expect(JSON.parse(text)).toEqual({ colour: 'red', count: 0, tags: [] });
  });

  it('sends no response_format when none is asked for', async () => {
    await ask({});
    expect(lastBody()).not.toHaveProperty('response_format');
  });

  it('rejects a schema outside the strict subset with 400 naming response_format, as the API does', async () => {
    const loose = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'], additionalProperties: false };
    const { error } = await ask({ responseFormat: { name: 'loose', schema: loose } });
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).status).toBe(400);
    expect((error as ProviderError).retryable).toBe(false);
    expect(sim.requests.at(-1)?.status).toBe(400);
    const nested = strict({ inner: { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] } });
    const second = await ask({ responseFormat: { name: 'nested', schema: nested } });
    expect((second.error as ProviderError).status).toBe(400);
  });

  it('checks the schema name pattern and the json_object "json" rule over raw HTTP', async () => {
    type Answer = { error: { param: string }; choices: { message: { content: string } }[] };
    const json = async (res: Response): Promise<Answer> => (await res.json()) as Answer;
    const post = (body: unknown) =>
      fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${sim.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const badName = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_schema', json_schema: { name: 'has space', schema: strict({}) } } });
    expect(badName.status).toBe(400);
    expect((await json(badName)).error.param).toBe('response_format.json_schema.name');
    const noJson = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_object' } });
    expect(noJson.status).toBe(400);
    expect((await json(noJson)).error.param).toBe('messages');
    const ok = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'answer in JSON' }], response_format: { type: 'json_object' } });
    expect(ok.status).toBe(200);
    expect((await json(ok)).choices[0]?.message.content).toBe('{}');
  });

  it('answers the conversation_analysis schema with an analysis derived from the transcript', async () => {
    const schema = strict({
      sentiment: { type: 'string', enum: ['positive', 'neutral', 'negative'] },
      sentimentScore: { type: 'number' },
      intent: { type: 'string' },
      customFields: strict({ plan: { type: ['string', 'null'], enum: ['basic', 'premium_plus', null] }, reason: { type: ['string', 'null'] } }),
    });
    const transcript = 'Transcript:\nAgent: Hello, how can I help?\nCaller: I want to cancel my Premium Plus plan because the price is too high.\nAgent: I can help with that.\nCaller: Thanks, that is great.';
    const { text } = await ask({ messages: [{ role: 'user', content: transcript }], responseFormat: { name: 'conversation_analysis', schema } });
    const analysis = JSON.parse(text);
    expect(analysis.intent).toBe('cancel_service');
    expect(analysis.customFields.plan).toBe('premium_plus');
    expect(analysis.customFields.reason).toContain('price');
    expect(['positive', 'neutral', 'negative']).toContain(analysis.sentiment);
    expect(analysis.sentimentScore).toBeGreaterThanOrEqual(-1);
    expect(analysis.sentimentScore).toBeLessThanOrEqual(1);
  });

  it('lets a one-off rule force the next reply, verbatim, then falls back to the schema', async () => {
    sim.addReplyFirst({ match: '', reply: '{"colour": "purple"}', times: 1 });
    const schema = strict({ colour: { type: 'string', enum: ['red', 'green'] } });
    expect((await ask({ responseFormat: { name: 'paint', schema } })).text).toBe('{"colour": "purple"}');
    expect((await ask({ responseFormat: { name: 'paint', schema } })).text).toBe('{"colour":"red"}');
  });

  it('takes one-off rules over the control API too', async () => {
    const res = await fetch(`${sim.url}/__sim/replies`, { method: 'POST', body: JSON.stringify([{ match: 'hello', reply: 'not json at all', times: 2 }]) });
    expect(res.status).toBe(200);
    expect((await ask({})).text).toBe('not json at all');
    expect((await ask({})).text).toBe('not json at all');
    expect((await ask({})).text).toBe('You said: Hello.');
  });
});
