/**
 * Post-call analysis end to end in the control plane: a call ended over the bus enqueues a
 * durable job in the end record's transaction; a JobRunner runs it against the OpenAI
 * simulator through the real adapter; the analysis is stored, served by
 * `GET …/analysis`, summarised on the conversation, and `AnalysisCompleted` reaches a
 * webhook receiver. This file owns its database (the runner claims any tenant's jobs).
 */
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '@vap/shared';
import { OpenAiSimulator } from '@vap/voice-pipeline/simulators';
import { ANALYSIS_JOB, AnalysisJobHandler } from '../../src/modules/conversations/analysis-job.js';
import { analysisLlms } from '../../src/modules/conversations/analysis-llm.js';
import { startCallHandling } from '../../src/modules/conversations/call-handlers.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { JobQueue } from '../../src/modules/jobs/job-queue.js';
import { JobRunner } from '../../src/modules/jobs/job-runner.js';
import type { WebhookDispatcher } from '../../src/modules/webhooks/webhook-dispatcher.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, call, createTenant } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest, publishEnded, recordEvents, waitForRow } from './calls.fixtures.js';
import type { SessionMessage } from './calls.fixtures.js';
import { startDispatcher } from './webhooks.fixtures.js';
import { webhookWorld } from './webhooks.world.js';

const w = webhookWorld();
let sim: OpenAiSimulator;
let handling: CallHandling;
let dispatcher: WebhookDispatcher;
let runner: JobRunner;

const customFields = [
  { name: 'department', type: 'enum', options: ['sales', 'billing', 'support'] },
  { name: 'callbackTime', type: 'string', description: 'When the caller wants a call back' },
];
const analysisConfig = { enabled: true, sentimentAnalysis: true, intentDetection: true, summaryEnabled: true, customFields };

beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-analysis-cp' });
  const log = pino({ level: 'silent' });
  handling = startCallHandling({ db: w.t.database.db, bus: w.t.bus, secrets: new SecretBox(TEST_SECRET_KEY), log, outbox: w.outbox, watchdog: false, heartbeatSettleMs: 0 });
  dispatcher = startDispatcher(w.t.database);
  w.outbox.onWake(() => dispatcher.wake());
  await dispatcher.start();
  const handler = new AnalysisJobHandler({ db: w.t.database.db, bus: w.t.bus, outbox: w.outbox, llms: analysisLlms({ apiKey: sim.apiKey, baseUrl: sim.url, simulated: true }), log });
  // Short backoff so the provider-failure test sees the queue's retries within seconds.
  runner = new JobRunner({ pool: w.t.database.pool, log, concurrency: 4, pollIntervalMs: 100, retryDelaysMs: [150, 300] }).register(ANALYSIS_JOB, handler.handle);
  await runner.start();
});
afterAll(async () => {
  await runner?.stop();
  await handling?.close();
  await dispatcher?.stop();
  await sim?.close();
});
beforeEach(() => sim.reset());

const conversationLines = (): SessionMessage[] => [
  message(0, { content: 'Thanks for calling Acme, how can I help?' }),
  message(1, { content: 'Hi, I have a billing question, the charge on my invoice looks wrong.' }),
  message(2, { content: 'I can check that for you right away.' }),
  message(3, { content: 'Great, thanks. Please call me back tomorrow, any time after 3 pm.' }),
];

/** A call for `agentId` prepared and ended over the bus, as a gateway does. */
async function endCall(agentId: string, messages: SessionMessage[] = conversationLines()): Promise<string> {
  const { tenantId } = w.tenant;
  const { conversationId } = await prepareCall(w.t.bus, prepareRequest(tenantId, agentId));
  await publishEnded(w.t.bus, endedRecord(tenantId, agentId, conversationId, messages));
  await waitForRow(w.t.database.pool, conversationId, (row) => expect(row.status).toBe('completed'));
  return conversationId;
}
const analysedRow = (id: string) => waitForRow(w.t.database.pool, id, (row) => expect(row.analysis).not.toBeNull());
const job = (id: string) => new JobQueue(w.t.database.pool).find(ANALYSIS_JOB, id);
const getAnalysis = (id: string, key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/conversations/${id}/analysis`);
type Envelope = { id: string; type: string; agentId: string; tenantId: string; timestamp: string; data: Record<string, unknown> };

describe('post-call analysis', () => {
  it('analyses an ended call: stored, served with every spec field, summarised on the conversation, AnalysisCompleted delivered', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    const hook = await w.webhook('/analysis', { agentId: agent.id, events: ['AnalysisCompleted'] });
    const events = recordEvents(w.t.bus, w.tenant.tenantId);
    const id = await endCall(agent.id);
    const row = await analysedRow(id);
    expect(row.analysis).toMatchObject({ conversationId: id, customFields: { department: 'billing' } });
    await expect.poll(async () => (await job(id))?.status).toBe('succeeded');

    const res = await getAnalysis(id);
    expect(res.statusCode).toBe(200);
    const a = res.json();
    expect(Object.keys(a).sort()).toEqual(['agentPerformanceNotes', 'callQualityScore', 'completedAt', 'conversationId', 'customFields', 'entities', 'intent', 'sentiment', 'sentimentBreakdown', 'sentimentScore', 'summary', 'topics']);
    expect(a.conversationId).toBe(id);
    expect(Date.parse(a.completedAt)).toBeGreaterThan(0);
    expect(['positive', 'neutral', 'negative']).toContain(a.sentiment);
    expect(a.sentimentScore).toBeGreaterThanOrEqual(-1);
    expect(a.sentimentScore).toBeLessThanOrEqual(1);
    expect(a.intent).toBe('billing_question');
    expect(customFields[0]!.options).toContain(a.customFields.department);
    expect(a.customFields.callbackTime).toMatch(/call me back tomorrow/i);
    expect(a.callQualityScore).toBeGreaterThanOrEqual(0);
    expect(a.callQualityScore).toBeLessThanOrEqual(10);

    // What the LLM was asked: structured output over the transcript.
    const body = sim.requests[0]?.body as { response_format: { json_schema: { name: string } }; messages: { content: string }[] };
    expect(body.response_format.json_schema.name).toBe('conversation_analysis');
    expect(body.messages[1]?.content).toContain('Caller: Hi, I have a billing question');

    const conv = (await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${id}`)).json();
    expect(conv.analysis).toEqual({ sentiment: a.sentiment, sentimentScore: a.sentimentScore, intent: a.intent, summary: a.summary, customFields: a.customFields });

    const [delivery] = await w.receiver.waitFor(1, '/analysis', 10_000);
    expect(verifyWebhook(hook.secret, delivery!.headers, delivery!.body)).toMatchObject({ ok: true });
    const envelope = JSON.parse(delivery!.body) as Envelope;
    expect(envelope).toMatchObject({ type: 'AnalysisCompleted', agentId: agent.id, tenantId: w.tenant.tenantId, id: expect.stringMatching(/^evt_/) });
    expect(envelope.data).toEqual({ conversationId: id, sentiment: a.sentiment, sentimentScore: a.sentimentScore, intent: a.intent, summary: a.summary, customFields: a.customFields });
    await expect.poll(() => events.of(id, 'AnalysisCompleted').length).toBe(1);
    await events.close();
  });

  it('repairs or retries a reply whose enum value breaks the schema; the stored value is one of the options', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    const bad = { sentiment: 'neutral', sentimentScore: 0, sentimentBreakdown: { agent: 0, user: 0 }, intent: 'x', entities: [], summary: 's', topics: [], customFields: { department: 'accounts_payable', callbackTime: null }, callQualityScore: 5, agentPerformanceNotes: 'n' };
    sim.addReplyFirst({ match: '', reply: JSON.stringify(bad), times: 1 });
    const id = await endCall(agent.id);
    const row = await analysedRow(id);
    expect((row.analysis as { customFields: { department: string } }).customFields.department).toBe('billing');
    expect(sim.requests).toHaveLength(2); // the bad reply, then the retry that states the problem
    expect(JSON.stringify(sim.requests[1]?.body)).toContain('customFields.department: \\"accounts_payable\\" is not one of');
  });

  it('never stores an invalid enum value: after the retries it is null', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    const bad = { sentiment: 'Positive', sentimentScore: 0.7, sentimentBreakdown: { agent: 0.2, user: 0.7 }, intent: 'billing_question', entities: [], summary: 'About a wrong charge.', topics: ['invoice'], customFields: { department: 'finance', callbackTime: 'tomorrow after 3 pm' }, callQualityScore: 8, agentPerformanceNotes: 'Helpful.' };
    sim.addReplyFirst({ match: '', reply: JSON.stringify(bad), times: 3 });
    const id = await endCall(agent.id);
    const row = await analysedRow(id);
    expect(row.analysis).toMatchObject({ sentiment: 'positive', summary: 'About a wrong charge.', customFields: { department: null, callbackTime: 'tomorrow after 3 pm' } });
    expect(sim.requests).toHaveLength(3);
  });

  it('stores a reply that carries NUL characters, each one as U+FFFD (jsonb refuses NUL)', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    const reply = { sentiment: 'positive', sentimentScore: 0.7, sentimentBreakdown: { agent: 0.2, user: 0.7 }, intent: 'billing\u0000question', entities: [], summary: 'About a\u0000 wrong charge.', topics: ['in\u0000voice'], customFields: { department: 'billing', callbackTime: null }, callQualityScore: 8, agentPerformanceNotes: 'Helpful.' };
    sim.addReplyFirst({ match: '', reply: JSON.stringify(reply), times: 1 });
    const id = await endCall(agent.id);
    const row = await analysedRow(id);
    expect(row.analysis).toMatchObject({ intent: 'billing\ufffdquestion', summary: 'About a\ufffd wrong charge.', topics: ['in\ufffdvoice'] });
    expect(sim.requests).toHaveLength(1);
  });

  it('retries through the queue when the provider fails, then succeeds', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    sim.setFaults({ failNext: { status: 500, count: 2 } });
    const id = await endCall(agent.id);
    await analysedRow(id);
    await expect.poll(async () => (await job(id))?.status).toBe('succeeded');
    const j = await job(id);
    expect(j).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(j?.lastError).toMatch(/ProviderError/);
    expect(sim.requests.map((r) => r.status)).toEqual([500, 500, 200]);
  });

  it('leaves out the parts switched off (sentimentAnalysis false: no sentiment fields)', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig: { ...analysisConfig, sentimentAnalysis: false } });
    const id = await endCall(agent.id);
    await analysedRow(id);
    const a = (await getAnalysis(id)).json();
    expect(a).toMatchObject({ sentiment: null, sentimentScore: null, sentimentBreakdown: null, intent: 'billing_question' });
    expect(a.summary).toEqual(expect.any(String));
    const schema = (sim.requests[0]?.body as { response_format: { json_schema: { schema: { properties: object } } } }).response_format.json_schema.schema;
    expect(Object.keys(schema.properties)).not.toContain('sentiment');
  });

  it('answers 409 while the analysis runs and 404 for a conversation deleted meanwhile, whose job then ends quietly', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    sim.setFaults({ firstTokenDelayMs: 800 });
    const id = await endCall(agent.id);
    await expect.poll(async () => (await job(id))?.status).toBe('running');
    const running = await getAnalysis(id);
    expect(running.statusCode).toBe(409);
    expect(running.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/invalid-state$/), detail: expect.stringContaining('running') });
    await w.t.database.pool.query('delete from conversations where id = $1', [id]);
    await expect.poll(async () => (await job(id))?.status, { timeout: 5000 }).toBe('succeeded');
    expect((await getAnalysis(id)).statusCode).toBe(404);
  });

  it('enqueues nothing when analysis is disabled or the caller said nothing, and answers 404 saying which', async () => {
    const off = await activeAgent(w.t.app, w.tenant.key);
    const offId = await endCall(off.id);
    expect(await job(offId)).toBeUndefined();
    const res = await getAnalysis(offId);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/analysis-not-found$/), detail: expect.stringContaining('not enabled') });
    expect((await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${offId}`)).json().analysis).toBeNull();

    const on = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    const silentId = await endCall(on.id, [message(0, { content: 'Hello, anyone there?' })]);
    expect(await job(silentId)).toBeUndefined();
    expect((await getAnalysis(silentId)).json().detail).toContain('nothing to analyse');
    expect(sim.requests).toHaveLength(0);
  });

  it('answers 409 while the call is in progress, 404 for another tenant, 403 without conversations:read', async () => {
    const agent = await activeAgent(w.t.app, w.tenant.key, { analysisConfig });
    const { conversationId } = await prepareCall(w.t.bus, prepareRequest(w.tenant.tenantId, agent.id));
    expect((await getAnalysis(conversationId)).statusCode).toBe(409);
    const { key: otherKey } = await createTenant(w.t.database);
    const other = await getAnalysis(conversationId, otherKey);
    expect(other.statusCode).toBe(404);
    expect(other.json().type).toMatch(/\/errors\/conversation-not-found$/);
    const { key: noScope } = await w.tenant.mintKey({ scopes: ['agents:read'] });
    expect((await getAnalysis(conversationId, noScope)).statusCode).toBe(403);
  });
});
