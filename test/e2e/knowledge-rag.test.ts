/**
 * RAG in a live call, end to end: a sandbox call to an agent whose knowledge base holds a
 * fact found nowhere else gets an answer built from it (the OpenAI simulator answers from
 * the "Relevant knowledge" message the pipeline sends), the same call to an agent without
 * the document does not, and the stored latency breakdown has the retrieval stage. The
 * document goes in through the knowledge-base API (upload, indexing job).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Json, Platform } from './platform.js';

const FACT = "The chef's special on Fridays is saffron risotto.";
const QUESTION = "What is the chef's special on Fridays?";

let p: Platform;

beforeAll(async () => {
  p = await startPlatform('in-process');
  p.providers.simulators.openai!.addReply({ match: 'all for today', reply: 'Thank you for calling. Goodbye!' });
}, 60_000);
afterAll(async () => {
  await p?.close();
});

/**
 * Uploads a text document through the knowledge-base API (multipart) and waits until the
 * indexing job has parsed, chunked, embedded (local embedder, the sandbox default) and indexed it.
 */
async function uploadDocument(name: string, text: string): Promise<string> {
  const form = new FormData();
  form.append('name', name);
  form.append('file', new Blob([text], { type: 'text/plain' }), `${name.toLowerCase()}.txt`);
  const res = await fetch(`${p.cpUrl}/api/v1/knowledge-base/documents`, { method: 'POST', headers: { authorization: `Bearer ${p.tenant.key}` }, body: form });
  const body = (await res.json()) as Json;
  expect(res.status, JSON.stringify(body)).toBe(202);
  const id = body.id as string;
  await expect
    .poll(async () => (await p.api('GET', `/api/v1/knowledge-base/documents/${id}/status`)).body.status, { timeout: 60_000, interval: 100 })
    .toBe('indexed');
  return id;
}

/** One sandbox call: the question, then goodbye; answers the stored conversation, its messages and latency. */
async function callAbout(agentId: string, number: string): Promise<{ conversation: Json; agentSaid: string[]; latency: Json }> {
  const callSid = `CA${randomBytes(16).toString('hex')}`;
  const lines = [QUESTION, "That's all for today, thanks."];
  p.providers.simulators.deepgram!.setScript(callSid, lines);
  const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
  if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
  await runCallerScript(placed.call, [{ expectAgent: true }, { say: lines[0]! }, { expectAgent: true }, { say: lines[1]! }, { expectHangup: true }], { speech: callerSpeechMulaw });
  const list = await p.api('GET', `/api/v1/conversations?agentId=${agentId}`);
  expect(list.body.total).toBe(1);
  const id = list.body.data[0].id as string;
  const conversation = await p.finishedConversation(id);
  const messages = (await p.api('GET', `/api/v1/conversations/${id}/messages`)).body;
  const agentSaid = (messages.messages as Json[]).filter((m) => m.role === 'agent').map((m) => m.content as string);
  const latency = (await p.api('GET', `/api/v1/conversations/${id}/latency`)).body;
  return { conversation, agentSaid, latency };
}

describe('knowledge base in a live call', () => {
  it('answers from a fact only in the agent’s document, shows the retrieval stage, and an agent without it does not know', async () => {
    const menu = await uploadDocument('Menu', ['Harbour Bistro serves lunch and dinner. Starters include grilled octopus and burrata.', FACT, 'Desserts change weekly. Ask your server about the tiramisu.'].join('\n\n'));
    const directions = await uploadDocument('Directions', 'Parking is free after six in the harbour car park. The bistro is next to the ferry terminal.');

    // The agents API keeps the assignment both ways (the document's assignedAgentIds).
    const withKb = await p.agentWithNumber({ knowledgeBaseIds: [menu, directions] });
    expect((await p.api('GET', `/api/v1/knowledge-base/documents/${menu}`)).body.assignedAgentIds).toEqual([withKb.agentId]);
    const without = await p.agentWithNumber();

    const informed = await callAbout(withKb.agentId, withKb.number);
    expect(informed.conversation.status).toBe('completed');
    expect(informed.agentSaid.join(' ')).toContain('saffron risotto');
    expect(informed.agentSaid).toContain(`According to our information: ${FACT}`);
    // The stored breakdown of the answer has the retrieval stage, counted apart from overhead.
    const [answer] = informed.latency.turns as Json[];
    expect(answer.retrievalMs).toBeGreaterThan(0);
    expect(answer.retrievalMs).toBeLessThan(800);
    expect(answer.totalMs).toBeGreaterThanOrEqual(answer.endpointingMs + answer.retrievalMs + answer.llmFirstTokenMs + answer.ttsFirstByteMs);

    // The gateway's stage histogram counts retrieval for the two replies of the informed call only.
    const retrievalCount = async () => {
      const text = await (await fetch(`${p.gateway.url}/metrics`)).text();
      return Number(/^vap_turn_stage_seconds_count\{stage="retrieval"\} (\d+)/m.exec(text)?.[1] ?? 'NaN');
    };
    expect(await retrievalCount()).toBe(informed.latency.turns.length);

    const uninformed = await callAbout(without.agentId, without.number);
    expect(uninformed.conversation.status).toBe('completed');
    expect(uninformed.agentSaid.length).toBeGreaterThan(1);
    expect(uninformed.agentSaid.join(' ')).not.toContain('saffron');
    for (const t of uninformed.latency.turns as Json[]) expect(t.retrievalMs).toBe(0);
    expect(await retrievalCount()).toBe(informed.latency.turns.length);

    // On the wire: the informed agent's question went to the LLM with the knowledge message, the other's without.
    const requests = p.providers.simulators.openai!.requests.filter((r) => r.path.endsWith('/chat/completions'));
    const asked = requests.map((r) => (r.body as { messages: { role: string; content: string }[] }).messages).filter((m) => m.at(-1)?.content === QUESTION);
    expect(asked).toHaveLength(2);
    const knowledgeOf = (messages: { role: string; content: string }[]) => messages.filter((m) => m.role === 'system' && m.content.startsWith('Relevant knowledge'));
    expect(knowledgeOf(asked[0]!)).toHaveLength(1);
    expect(knowledgeOf(asked[0]!)[0]!.content).toContain(FACT);
    expect(knowledgeOf(asked[1]!)).toHaveLength(0);
  }, 90_000);
});
