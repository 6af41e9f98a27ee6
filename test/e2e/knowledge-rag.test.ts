/**
 * RAG in a live call, end to end: a sandbox call to an agent whose knowledge base holds a
 * fact found nowhere else gets an answer built from it (the OpenAI simulator answers from
 * the "Relevant knowledge" message the pipeline sends), the same call to an agent without
 * the document does not, and the stored latency breakdown has the retrieval stage.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { newId } from '@vap/shared';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { LocalEmbedder } from '../../control-plane/src/modules/knowledge-base/embedding/index.js';
import { KbIndex, detectVectorSupport } from '../../control-plane/src/modules/knowledge-base/index/index.js';
import type { KbChunk } from '../../control-plane/src/modules/knowledge-base/types.js';
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
 * Indexes a text document of the platform's tenant as the indexing job would (chunks embedded
 * by the local embedder, the sandbox default, written with the KbIndex) and returns its id.
 */
async function indexDocument(name: string, paragraphs: string[]): Promise<string> {
  const pool = p.cp.database.pool;
  const id = newId('kb');
  await pool.query(
    `insert into kb_documents (id, tenant_id, name, filename, mime_type, document_type, size_bytes, storage_key)
     values ($1, $2, $3, $4, 'text/plain', 'text', $5, $6)`,
    [id, p.tenant.tenantId, name, `${name}.txt`, paragraphs.join('\n\n').length, `knowledge-base/${p.tenant.tenantId}/${id}/${name}.txt`],
  );
  const chunks: KbChunk[] = paragraphs.map((text, position) => ({ position, text, tokenCount: text.split(/\s+/).length, pageNumber: null, context: null }));
  const embedder = new LocalEmbedder();
  const index = new KbIndex({ pool, vectorSupport: await detectVectorSupport(pool) });
  await index.replaceDocumentChunks(id, embedder.model, chunks, await embedder.embed(paragraphs, 'document'));
  return id;
}

/** Assigns documents to an agent as the knowledge-base API does (both directions). */
async function assign(agentId: string, documentIds: string[]): Promise<void> {
  for (const documentId of documentIds) {
    await p.cp.database.pool.query('insert into kb_document_agents (document_id, agent_id, tenant_id) values ($1, $2, $3) on conflict do nothing', [documentId, agentId, p.tenant.tenantId]);
  }
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
    const menu = await indexDocument('Menu', [
      'Harbour Bistro serves lunch and dinner. Starters include grilled octopus and burrata.',
      FACT,
      'Desserts change weekly. Ask your server about the tiramisu.',
    ]);
    const parking = await indexDocument('Directions', ['Parking is free after six in the harbour car park. The bistro is next to the ferry terminal.']);

    const withKb = await p.agentWithNumber({ knowledgeBaseIds: [menu, parking] });
    await assign(withKb.agentId, [menu, parking]);
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
