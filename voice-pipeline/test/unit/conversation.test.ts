import { describe, expect, it } from 'vitest';
import { Conversation } from '../../src/processors/conversation.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { LlmEvent } from '../../src/providers/types.js';
import { frames, Harness, settle } from './harness.js';
import { FakeLlm } from './pipeline-fakes.js';

const SYSTEM = 'You are Ava, the receptionist of a dental practice.';

function setup(llm = new FakeLlm()) {
  let now = 0;
  const conversation = new Conversation({ llm, systemPrompt: SYSTEM, settings: { model: 'gpt-4o-mini', temperature: 0.3, maxTokens: 200 }, clock: () => now });
  const h = new Harness(conversation);
  return { llm, conversation, h, setNow: (ms: number) => (now = ms) };
}

const texts = (h: Harness) => h.downOf('llm.text').map((f) => f.text);

describe('Conversation', () => {
  it('answers a user turn: LLM request with system prompt and history, text streamed down, llm.done, usage up', async () => {
    const { llm, h, conversation, setNow } = setup();
    setNow(1000);
    h.down(frames.userTurn('What are your opening hours?', 1000));
    expect(llm.calls).toHaveLength(1);
    const call = llm.calls[0]!;
    expect(call.request).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.3,
      maxTokens: 200,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'What are your opening hours?' },
      ],
    });
    const start = h.downOf('agent.turn-start');
    expect(start).toMatchObject([{ source: 'llm', purpose: 'reply', at: 1000 }]);
    const turnId = start[0]!.turnId;
    setNow(1250);
    call.reply.push({ type: 'text', text: 'We are open' });
    await settle();
    expect(h.downOf('llm.text')).toEqual([{ kind: 'llm.text', turnId, text: 'We are open', at: 1250 }]);
    expect(conversation.llmFirstTokenMs.get(turnId)).toBe(250);
    call.reply.push({ type: 'text', text: ' nine to five.' });
    call.reply.push({ type: 'usage', inputTokens: 42, outputTokens: 7 });
    call.reply.push({ type: 'done', finishReason: 'stop' });
    call.reply.end();
    await settle();
    expect(h.kinds('down')).toEqual(['user.turn', 'agent.turn-start', 'llm.text', 'llm.text', 'llm.done']);
    expect(texts(h)).toEqual(['We are open', ' nine to five.']);
    expect(h.downOf('llm.done')[0]!.turnId).toBe(turnId);
    expect(h.upOf('usage').map((f) => f.usage)).toEqual([{ llmInputTokens: 42, llmOutputTokens: 7 }]);
  });

  it('aborts the LLM signal on interrupt and streams nothing more of that reply', async () => {
    const { llm, h } = setup();
    h.down(frames.userTurn('Tell me everything.', 100));
    const call = llm.calls[0]!;
    call.reply.push({ type: 'text', text: 'Well, first' });
    await settle();
    h.down(frames.interrupt(500));
    expect(call.signal.aborted).toBe(true);
    call.reply.push({ type: 'text', text: ' of all' });
    await settle();
    expect(texts(h)).toEqual(['Well, first']);
    expect(h.kinds('down')).toEqual(['user.turn', 'agent.turn-start', 'llm.text', 'interrupt']);
    expect(h.upOf('error')).toEqual([]);
  });

  it('adds the assistant message to the history only from agent.spoken, as heard', async () => {
    const { llm, h, conversation } = setup(new FakeLlm(() => ({ events: [{ type: 'text', text: 'Our opening hours are nine to five on weekdays.' }] })));
    h.down(frames.userTurn('When are you open?', 100));
    await settle();
    expect(h.downOf('llm.done')).toHaveLength(1);
    expect(conversation.messages.map((m) => m.role)).toEqual(['system', 'user']);
    const spoken = frames.spoken('t', 'Our opening hours are nine to five on weekdays.', { heardText: 'Our opening hours ', interrupted: true });
    h.up(spoken);
    expect(h.out.up).toContain(spoken);
    h.down(frames.userTurn('Sorry, on Saturday?', 3000));
    expect(llm.calls[1]!.request.messages).toEqual([
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'When are you open?' },
      { role: 'assistant', content: 'Our opening hours' },
      { role: 'user', content: 'Sorry, on Saturday?' },
    ]);
    // Nothing heard, nothing remembered.
    h.up(frames.spoken('t2', 'Unheard.', { heardText: ' ', interrupted: true }));
    expect(conversation.messages).toHaveLength(4);
  });

  it('supersedes a reply still in flight when a newer user turn arrives', async () => {
    const { llm, h, conversation } = setup();
    h.down(frames.userTurn('I want to book', 100));
    const first = llm.calls[0]!;
    const firstTurn = h.downOf('agent.turn-start')[0]!.turnId;
    first.reply.push({ type: 'text', text: 'Sure, for when' });
    await settle();
    h.reset().down(frames.userTurn('for tomorrow at ten', 900, { startAt: 800 }));
    expect(first.signal.aborted).toBe(true);
    expect(h.kinds('down')).toEqual(['user.turn', 'interrupt', 'agent.turn-start']);
    expect(h.downOf('interrupt')).toEqual([{ kind: 'interrupt', cause: 'superseded', at: 900, speechOnsetAt: 800 }]);
    expect(h.downOf('agent.turn-start')[0]!.turnId).not.toBe(firstTurn);
    first.reply.push({ type: 'text', text: '?' });
    await settle();
    expect(h.downOf('llm.text')).toEqual([]);
    expect(conversation.messages.map((m) => m.content)).toEqual([SYSTEM, 'I want to book', 'for tomorrow at ten']);
    expect(llm.calls[1]!.signal.aborted).toBe(false);
  });

  it('does not announce an interrupt for a user turn when no reply is in flight', async () => {
    const { h } = setup(new FakeLlm(() => ({ events: [{ type: 'text', text: 'Hello!' }] })));
    h.down(frames.userTurn('Hi', 100));
    await settle();
    h.down(frames.userTurn('Are you there?', 2000));
    expect(h.downOf('interrupt')).toEqual([]);
  });

  it('ends the turn and reports a fatal error up when the LLM fails', async () => {
    const failure = new ProviderError({ provider: 'fake-llm', capability: 'llm', code: 'llm.http_401', message: 'bad key', retryable: false, status: 401 });
    const { h } = setup(new FakeLlm(() => ({ events: [{ type: 'text', text: 'Let me' }], error: failure })));
    h.down(frames.userTurn('Hello?', 100));
    await settle();
    expect(h.kinds('down')).toEqual(['user.turn', 'agent.turn-start', 'llm.text', 'llm.done']);
    const errors = h.upOf('error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.fatal).toBe(true);
    expect(errors[0]!.error).toBe(failure);
  });

  it('wraps a non-provider failure into a fatal llm.failed ProviderError', async () => {
    const { h } = setup(new FakeLlm(() => ({ events: [], error: new TypeError('boom') })));
    h.down(frames.userTurn('Hello?', 100));
    await settle();
    expect(h.upOf('error').map((f) => [f.error instanceof ProviderError, f.error.code, f.error.capability, f.fatal])).toEqual([[true, 'llm.failed', 'llm', true]]);
  });

  it('speaks agent.say as turn-start, text and done without calling the LLM', () => {
    const { llm, h } = setup();
    h.down(frames.say('Hi, this is Ava. How can I help?', 'first-message', 5));
    expect(llm.calls).toEqual([]);
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'llm.text', 'llm.done']);
    const [start] = h.downOf('agent.turn-start');
    expect(start).toMatchObject({ source: 'system', purpose: 'first-message', at: 5 });
    expect(h.downOf('llm.text')).toEqual([{ kind: 'llm.text', turnId: start!.turnId, text: 'Hi, this is Ava. How can I help?', at: 5 }]);
    expect(h.downOf('llm.done')[0]!.turnId).toBe(start!.turnId);
  });

  it('sends a DTMF turn to the LLM as "[DTMF] 12"', () => {
    const { llm, h } = setup(new FakeLlm(() => ({ events: [] as LlmEvent[] })));
    h.down(frames.userTurn('12', 100, { source: 'dtmf' }));
    expect(llm.calls[0]!.request.messages.at(-1)).toEqual({ role: 'user', content: '[DTMF] 12' });
  });
});
