/**
 * analyseConversation through the real OpenAI adapter against the simulator: what is asked
 * over the wire, what comes back, and what happens when replies break the schema.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { analyseConversation } from '../../src/analysis/index.js';
import type { AnalysisMessage, AnalysisSettings } from '../../src/analysis/index.js';
import { OpenAiLlm } from '../../src/providers/openai/llm.js';
import { OpenAiSimulator } from '../../src/providers/openai/simulator.js';
import { ProviderError } from '../../src/providers/provider-error.js';

let sim: OpenAiSimulator;
let llm: OpenAiLlm;

beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-analysis' });
  llm = new OpenAiLlm({ apiKey: sim.apiKey, baseUrl: sim.url });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

const settings: AnalysisSettings = {
  sentimentAnalysis: true,
  intentDetection: true,
  summaryEnabled: true,
  customFields: [
    { name: 'department', type: 'enum', options: ['sales', 'billing', 'support'] },
    { name: 'callbackTime', type: 'string', description: 'When the caller wants a call back' },
  ],
};
const messages: AnalysisMessage[] = [
  { role: 'agent', content: 'Thanks for calling Acme, how can I help?' },
  { role: 'user', content: 'Hi, I have a billing question about my invoice, the charge looks wrong.' },
  { role: 'agent', content: 'I can check that for you.' },
  { role: 'user', content: 'Thanks, that is great. Please call me back tomorrow, any time after 3 pm.' },
];
const run = (over: Partial<Parameters<typeof analyseConversation>[0]> = {}) => analyseConversation({ llm, model: 'gpt-4o-mini', settings, messages, ...over }, new AbortController().signal);
type Body = { response_format: { json_schema: { name: string; schema: { properties: Record<string, unknown> } } }; messages: { role: string; content: string }[]; temperature: number };
const bodies = () => sim.requests.map((r) => r.body as Body);

describe('analyseConversation', () => {
  it('asks with structured output and returns the analysis the simulator derives', async () => {
    const r = await run();
    expect(r.attempts).toBe(1);
    expect(r.dropped).toEqual([]);
    const [body] = bodies();
    expect(body?.response_format.json_schema.name).toBe('conversation_analysis');
    expect(body?.temperature).toBe(0);
    expect(body?.messages[1]?.content).toContain('Caller: Hi, I have a billing question about my invoice');
    expect(r.analysis.intent).toBe('billing_question');
    expect(r.analysis.customFields.department).toBe('billing');
    expect(r.analysis.customFields.callbackTime).toMatch(/call me back tomorrow/i);
    expect(r.analysis.sentimentBreakdown).toEqual({ agent: expect.any(Number), user: expect.any(Number) });
    expect(r.analysis.entities).toEqual(expect.arrayContaining([{ type: 'time', value: '3 pm' }, { type: 'date', value: 'tomorrow' }]));
    expect(r.usage.inputTokens).toBeGreaterThan(0);
  });

  it('retries once with the problems stated when an enum value is not among the options', async () => {
    sim.addReplyFirst({ match: '', reply: JSON.stringify({ sentiment: 'neutral', sentimentScore: 0, sentimentBreakdown: { agent: 0, user: 0 }, intent: 'x', entities: [], summary: 's', topics: [], customFields: { department: 'accounts', callbackTime: null }, callQualityScore: 5, agentPerformanceNotes: '' }), times: 1 });
    const r = await run();
    expect(r.attempts).toBe(2);
    expect(r.dropped).toEqual([]);
    expect(r.analysis.customFields.department).toBe('billing');
    const retry = bodies()[1]!;
    expect(retry.messages.at(-2)).toEqual({ role: 'assistant', content: expect.stringContaining('"accounts"') });
    expect(retry.messages.at(-1)?.content).toContain('customFields.department: "accounts" is not one of "sales", "billing", "support"');
  });

  it('repairs without asking again when the fault is only case or spacing', async () => {
    sim.addReplyFirst({ match: '', reply: JSON.stringify({ sentiment: 'NEGATIVE', sentimentScore: -5, sentimentBreakdown: { agent: 0, user: -1 }, intent: 'complaint', entities: [], summary: 's', topics: ['a'], customFields: { department: ' Support ', callbackTime: null }, callQualityScore: 2, agentPerformanceNotes: 'ok' }), times: 1 });
    const r = await run();
    expect(r.attempts).toBe(1);
    expect(r.analysis.sentiment).toBe('negative');
    expect(r.analysis.sentimentScore).toBe(-1);
    expect(r.analysis.customFields.department).toBe('support');
  });

  it('after two retries drops what is still invalid: the enum becomes null, valid fields stay', async () => {
    const bad = { sentiment: 'positive', sentimentScore: 0.5, sentimentBreakdown: { agent: 0.5, user: 0.5 }, intent: 'refund', entities: [], summary: 'A summary.', topics: [], customFields: { department: 'accounts', callbackTime: 'never' }, callQualityScore: 7, agentPerformanceNotes: 'fine' };
    sim.addReplyFirst({ match: '', reply: JSON.stringify(bad), times: 3 });
    const r = await run();
    expect(r.attempts).toBe(3);
    expect(sim.requests).toHaveLength(3);
    expect(r.dropped.map((p) => p.field)).toEqual(['customFields.department']);
    expect(r.analysis.customFields).toEqual({ department: null, callbackTime: 'never' });
    expect(r.analysis.summary).toBe('A summary.');
  });

  it('recovers from replies that are not JSON or miss fields', async () => {
    sim.addReplyFirst({ match: '', reply: 'I think the caller was happy.', times: 1 });
    const first = await run();
    expect(first.attempts).toBe(2);
    expect(first.dropped).toEqual([]);
    sim.addReplyFirst({ match: '', reply: '{"sentiment":"positive"}', times: 3 });
    const second = await run();
    expect(second.attempts).toBe(3);
    expect(second.analysis.summary).toBeNull();
    expect(second.analysis.customFields).toEqual({ department: null, callbackTime: null });
    expect(second.dropped.map((p) => p.field)).toContain('summary');
  });

  it('leaves out the parts switched off, on the wire and in the result', async () => {
    const r = await run({ settings: { ...settings, sentimentAnalysis: false, summaryEnabled: false } });
    expect(Object.keys(bodies()[0]!.response_format.json_schema.schema.properties)).toEqual(['intent', 'entities', 'customFields', 'callQualityScore', 'agentPerformanceNotes']);
    expect(r.analysis.sentiment).toBeNull();
    expect(r.analysis.sentimentScore).toBeNull();
    expect(r.analysis.summary).toBeNull();
    expect(r.analysis.intent).toBe('billing_question');
  });

  it('rejects with the ProviderError when the provider fails, and with an AbortError when aborted', async () => {
    sim.setFaults({ failNext: { status: 500, count: 1 } });
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).retryable).toBe(true);
    sim.setFaults({ hang: true });
    const controller = new AbortController();
    const pending = analyseConversation({ llm, model: 'gpt-4o-mini', settings, messages }, controller.signal);
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
