import { describe, expect, it } from 'vitest';
import { Conversation } from '../../src/processors/conversation.js';
import { KNOWLEDGE_HEADER, cutText, knowledgeMessage, retrieveWithin } from '../../src/session/knowledge.js';
import type { KnowledgeOptions, KnowledgePassage } from '../../src/session/knowledge.js';
import { frames, Harness, settle } from './harness.js';
import { FakeLlm, llmReply } from './pipeline-fakes.js';

const SYSTEM = 'You are Ava, the host of Trattoria Sole.';

const passage = (documentName: string, text: string, pageNumber: number | null = null): KnowledgePassage => ({ documentName, text, pageNumber });

/** A sentence-rich text of about `n` characters. */
function prose(n: number, word = 'risotto'): string {
  let s = '';
  for (let i = 0; s.length < n; i++) s += `Sentence ${i} mentions ${word} and the kitchen. `;
  return s.trim();
}

function setup(knowledge?: KnowledgeOptions) {
  let now = 0;
  const llm = new FakeLlm(() => ({ events: llmReply('Noted.') }));
  const conversation = new Conversation({ llm, systemPrompt: SYSTEM, settings: { model: 'gpt-4o-mini' }, clock: () => now, ...(knowledge ? { knowledge } : {}) });
  const h = new Harness(conversation);
  return { llm, conversation, h, setNow: (ms: number) => (now = ms) };
}

/** Resolves on a later macrotask (real timers): retrieval that takes real, if short, time. */
const later = <T>(value: T, ms = 5): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(value), ms));

async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('knowledgeMessage', () => {
  it('labels passages with their documents and pages, best first', () => {
    const content = knowledgeMessage([passage('Menu.pdf', 'The chef\u2019s special on Fridays is saffron risotto.', 2), passage('FAQ', 'We open at noon.')])!;
    expect(content.startsWith(KNOWLEDGE_HEADER)).toBe(true);
    expect(content).toContain('[1] Menu.pdf, page 2:\nThe chef\u2019s special on Fridays is saffron risotto.');
    expect(content).toContain('[2] FAQ:\nWe open at noon.');
    expect(content.indexOf('[1]')).toBeLessThan(content.indexOf('[2]'));
  });

  it('stays within maxChars: whole passages best first, then one cut at a sentence end, then none', () => {
    const passages = [passage('A', prose(2500, 'alpha')), passage('B', prose(2500, 'beta')), passage('C', prose(2500, 'gamma')), passage('D', prose(100, 'delta'))];
    for (const maxChars of [6000, 3000, 1000]) {
      const content = knowledgeMessage(passages, maxChars)!;
      expect(content.length, `maxChars ${maxChars}`).toBeLessThanOrEqual(maxChars);
    }
    const content = knowledgeMessage(passages, 6000)!;
    expect(content).toContain(passages[0]!.text);
    expect(content).toContain(passages[1]!.text);
    expect(content).toContain('[3] C:');
    expect(content).not.toContain(passages[2]!.text);
    // The cut passage ends on a whole sentence and says it was cut; the smaller passage after it is not squeezed in.
    expect(content).toMatch(/kitchen\.…$/);
    expect(content).not.toContain('delta');
  });

  it('leaves out a passage that would keep under 200 characters, and answers null without passages', () => {
    const first = passage('A', prose(900));
    const content = knowledgeMessage([first, passage('B', prose(900, 'beta'))], 1200)!;
    expect(content).toContain(first.text);
    expect(content).not.toContain('[2] B');
    expect(knowledgeMessage([], 6000)).toBeNull();
    expect(knowledgeMessage([passage('A', '   ')], 6000)).toBeNull();
  });

  it('cutText cuts at a sentence end, else a word boundary, never past max', () => {
    expect(cutText('Short.', 100)).toBe('Short.');
    expect(cutText('One two three. Four five six seven eight nine.', 24)).toBe('One two three.…');
    // A sentence end in the first half only would waste the room: cut at a word instead.
    expect(cutText('One two three. Four five six seven eight nine.', 30)).toBe('One two three. Four five six…');
    const words = cutText('alpha beta gamma delta epsilon zeta eta theta', 25);
    expect(words).toBe('alpha beta gamma delta…');
    expect(words.length).toBeLessThanOrEqual(25);
  });
});

describe('retrieveWithin', () => {
  it('gives up after the timeout: no passages, a timed-out failure, and the request signal aborted', async () => {
    const failures: [unknown, boolean][] = [];
    let signal: AbortSignal | undefined;
    const started = performance.now();
    const passages = await retrieveWithin(
      {
        timeoutMs: 50,
        retrieve: (_q, s) => {
          signal = s;
          return new Promise(() => undefined);
        },
        onFailure: (err, timedOut) => failures.push([err, timedOut]),
      },
      'anything',
      new AbortController().signal,
    );
    expect(passages).toEqual([]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(failures).toHaveLength(1);
    expect(failures[0]![1]).toBe(true);
    expect(signal?.aborted).toBe(true);
  });

  it('turns an error into no passages, reported as not timed out', async () => {
    const failures: [unknown, boolean][] = [];
    const passages = await retrieveWithin({ retrieve: () => Promise.reject(new Error('no-responders')), onFailure: (err, t) => failures.push([err, t]) }, 'q', new AbortController().signal);
    expect(passages).toEqual([]);
    expect((failures[0]![0] as Error).message).toBe('no-responders');
    expect(failures[0]![1]).toBe(false);
  });
});

describe('Conversation with a knowledge base', () => {
  it('sends the passages as a system message after the prompt, for that request only, and records retrievalMs', async () => {
    const queries: string[] = [];
    const answers = [[passage('Menu', 'The chef\u2019s special on Fridays is saffron risotto.')], [passage('Hours', 'We open at noon every day.')]];
    const { llm, conversation, h, setNow } = setup({
      retrieve: (query) => {
        queries.push(query);
        setNow(1000 + 120 * queries.length);
        return later(answers[queries.length - 1]!);
      },
    });
    setNow(1000);
    h.down(frames.userTurn('What is the special on Fridays?', 1000));
    expect(llm.calls).toHaveLength(0); // waiting for the passages
    await until(() => llm.calls.length === 1);
    const first = llm.calls[0]!.request.messages;
    expect(first.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(first[0]).toEqual({ role: 'system', content: SYSTEM });
    expect(first[1]!.content).toContain('[1] Menu:\nThe chef\u2019s special on Fridays is saffron risotto.');
    const turnId = h.downOf('agent.turn-start')[0]!.turnId;
    expect(conversation.retrievalMs.get(turnId)).toBe(120);
    await settle();
    // Knowledge never enters the history.
    expect(conversation.messages.map((m) => m.content)).toEqual([SYSTEM, 'What is the special on Fridays?']);

    h.up(frames.spoken(turnId, 'Noted.', { heardText: 'Noted.' }));
    h.down(frames.userTurn('And when do you open?', 3000));
    await until(() => llm.calls.length === 2);
    const second = llm.calls[1]!.request.messages;
    expect(queries).toEqual(['What is the special on Fridays?', 'And when do you open?']);
    expect(second.map((m) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'user']);
    expect(second[1]!.content).toContain('We open at noon every day.');
    // The first turn's passages are gone: only the new turn's knowledge is in the request.
    expect(second.some((m) => typeof m.content === 'string' && m.content.includes('saffron'))).toBe(false);
    expect(second.filter((m) => m.role === 'system')).toHaveLength(2);
  });

  it('on a retrieval timeout answers without knowledge and reports the failure', async () => {
    const failures: boolean[] = [];
    const { llm, conversation, h } = setup({ timeoutMs: 30, retrieve: () => new Promise(() => undefined), onFailure: (_e, timedOut) => failures.push(timedOut) });
    h.down(frames.userTurn('What is the special?', 100));
    await until(() => llm.calls.length === 1);
    expect(llm.calls[0]!.request.messages).toEqual([
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'What is the special?' },
    ]);
    expect(failures).toEqual([true]);
    await until(() => h.downOf('llm.done').length === 1);
    expect(h.downOf('llm.text').map((f) => f.text).join('')).toBe('Noted.');
    expect(h.upOf('error')).toEqual([]);
    expect(conversation.retrievalMs.size).toBe(1);
  });

  it('does not retrieve for DTMF turns, and drops a turn interrupted while retrieving', async () => {
    let calls = 0;
    let release: (p: KnowledgePassage[]) => void = () => undefined;
    const { llm, h } = setup({
      retrieve: () => {
        calls++;
        return new Promise((resolve) => (release = resolve));
      },
    });
    h.down(frames.userTurn('1234', 100, { source: 'dtmf' }));
    expect(calls).toBe(0);
    expect(llm.calls).toHaveLength(1);
    expect(llm.calls[0]!.request.messages.at(-1)).toEqual({ role: 'user', content: '[DTMF] 1234' });

    h.down(frames.userTurn('What is on the menu?', 2000));
    expect(calls).toBe(1);
    h.down(frames.interrupt(2100));
    release([passage('Menu', 'Risotto.')]);
    await settle(100);
    await new Promise((r) => setTimeout(r, 10));
    expect(llm.calls).toHaveLength(1);
  });
});
