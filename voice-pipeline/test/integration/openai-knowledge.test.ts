/**
 * The OpenAI simulator answering from retrieved knowledge (RAG in sandbox calls), over real
 * HTTP through the real adapter: the knowledge message as the pipeline builds it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAiLlm } from '../../src/providers/openai/llm.js';
import { OpenAiSimulator } from '../../src/providers/openai/simulator.js';
import type { LlmMessage } from '../../src/providers/types.js';
import { knowledgeMessage } from '../../src/session/knowledge.js';
import { collect } from '../contracts/llm.contract.js';

let sim: OpenAiSimulator;
beforeAll(async () => {
  sim = await OpenAiSimulator.start({ apiKey: 'sk-test-openai-knowledge' });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.reset());

const SYSTEM: LlmMessage = { role: 'system', content: 'You are the host of Trattoria Sole.' };
const KNOWLEDGE: LlmMessage = {
  role: 'system',
  content: knowledgeMessage([
    { documentName: 'Menu.pdf', pageNumber: 2, text: 'Our kitchen uses local produce. The chef\u2019s special on Fridays is saffron risotto. Desserts change weekly.' },
    { documentName: 'Hours', pageNumber: null, text: 'We open at noon and close at eleven.\n\nParking is free after six.' },
  ])!,
};

async function answer(messages: LlmMessage[]): Promise<string> {
  const llm = new OpenAiLlm({ apiKey: sim.apiKey, baseUrl: sim.url });
  const { events, error } = await collect(llm.stream({ model: 'gpt-4o-mini', messages }, new AbortController().signal));
  expect(error).toBeNull();
  return events.map((e) => (e.type === 'text' ? e.text : '')).join('');
}

describe('OpenAI simulator with a "Relevant knowledge" message', () => {
  it('answers with the passage sentence sharing the most words with the question', async () => {
    expect(await answer([SYSTEM, KNOWLEDGE, { role: 'user', content: "What's the chef's special on Fridays?" }])).toBe(
      'According to our information: The chef\u2019s special on Fridays is saffron risotto.',
    );
    expect(await answer([SYSTEM, KNOWLEDGE, { role: 'user', content: 'When do you open?' }])).toBe('According to our information: We open at noon and close at eleven.');
    expect(await answer([SYSTEM, KNOWLEDGE, { role: 'user', content: 'Is parking free?' }])).toBe('According to our information: Parking is free after six.');
  });

  it('echoes as before when no sentence shares a word, and when there is no knowledge message', async () => {
    expect(await answer([SYSTEM, KNOWLEDGE, { role: 'user', content: 'Hello there!' }])).toBe('You said: Hello there!.');
    expect(await answer([SYSTEM, { role: 'user', content: "What's the chef's special on Fridays?" }])).toBe("You said: What's the chef's special on Fridays?.");
  });

  it('keeps the request on the wire as sent and lets scripted replies win', async () => {
    sim.addReply({ match: 'special', reply: 'Scripted.' });
    expect(await answer([SYSTEM, KNOWLEDGE, { role: 'user', content: 'What is the special?' }])).toBe('Scripted.');
    const body = sim.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(body.messages.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(body.messages[1]!.content).toBe(KNOWLEDGE.content);
  });
});
