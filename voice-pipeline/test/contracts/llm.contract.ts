/**
 * The LlmProvider contract (STYLE.md §4): every LLM adapter runs it against its simulator,
 * asserting what went over the wire as well as what came back. Call `llmContract(target)`
 * at the top level of an integration test file, after starting the simulator in beforeAll.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { LlmEvent, LlmProvider, LlmRequest } from '../../src/providers/types.js';

/** The fault controls every LLM simulator offers (names as in the OpenAI simulator). Times in ms. */
export interface LlmContractFaults {
  firstTokenDelayMs: number;
  interTokenDelayMs: number;
  failNext: { status: number; count: number } | null;
  midStreamErrorAfterTokens: number | null;
  dropAfterTokens: number | null;
  hang: boolean;
}

/** What the contract needs from a simulator. Text replies must stream one word-ish token per delta. */
export interface LlmContractSimulator {
  addReply(rule: { match: string | RegExp; reply: string } | { match: string | RegExp; toolCall: { name: string; arguments: Record<string, unknown> } }): void;
  clearReplies(): void;
  setFaults(patch: Partial<LlmContractFaults>): void;
  resetFaults(): void;
  readonly requests: readonly { completed: boolean; clientDisconnected: boolean }[];
}

export interface LlmContractTarget {
  /** Label for the describe block, e.g. `openai`. */
  name: string;
  /** A fresh adapter pointed at the simulator; `apiKey` overrides the valid key, `timeoutMs` the adapter's timeout. */
  provider: (opts?: { apiKey?: string; timeoutMs?: number }) => LlmProvider;
  simulator: () => LlmContractSimulator;
  /**
   * The simulator's last recorded request decoded back into our terms by provider-specific
   * test code written independently of the adapter's encoder (it reads the wire, not the adapter).
   */
  lastWireRequest: () => LlmRequest;
  /** Settings the provider's API has no field for are left out of the wire assertion. */
  unsupported?: ('topP' | 'frequencyPenalty' | 'presencePenalty')[];
}

export interface Collected {
  events: LlmEvent[];
  texts: string[];
  error: unknown;
}

/** Drains a stream, keeping the events that came before a failure and the failure itself. */
export async function collect(stream: AsyncIterable<LlmEvent>, onEvent?: (e: LlmEvent) => void): Promise<Collected> {
  const events: LlmEvent[] = [];
  let error: unknown = null;
  try {
    for await (const e of stream) {
      events.push(e);
      onEvent?.(e);
    }
  } catch (err) {
    error = err;
  }
  return { events, texts: events.flatMap((e) => (e.type === 'text' ? [e.text] : [])), error };
}

const user = (content: string): LlmRequest => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
const signal = (): AbortSignal => new AbortController().signal;

function expectProviderError(error: unknown, code: string, retryable: boolean): ProviderError {
  expect(error).toBeInstanceOf(ProviderError);
  const e = error as ProviderError;
  expect({ code: e.code, retryable: e.retryable, capability: e.capability }).toEqual({ code, retryable, capability: 'llm' });
  return e;
}

export function llmContract(target: LlmContractTarget): void {
  describe(`LlmProvider contract: ${target.name}`, () => {
    const sim = (): LlmContractSimulator => target.simulator();

    beforeEach(() => {
      sim().clearReplies();
      sim().resetFaults();
    });

    it('streams the scripted reply as several text deltas that join to it, then done(stop)', async () => {
      const reply = 'We are open from nine to five, Monday to Friday.';
      sim().addReply({ match: 'opening hours', reply });
      const { events, texts, error } = await collect(target.provider().stream(user('What are your opening hours?'), signal()));
      expect(error).toBeNull();
      expect(texts.length).toBeGreaterThanOrEqual(3);
      expect(texts.every((t) => t !== '')).toBe(true);
      expect(texts.join('')).toBe(reply);
      expect(events.at(-1)).toEqual({ type: 'done', finishReason: 'stop' });
    });

    it('delivers the first delta while the simulator is still sending the reply', async () => {
      sim().addReply({ match: 'story', reply: 'Once upon a time there was a very small dental clinic by the sea.' });
      sim().setFaults({ interTokenDelayMs: 20 });
      let completedAtFirstText: boolean | undefined;
      const { texts, error } = await collect(target.provider().stream(user('Tell me a story'), signal()), (e) => {
        if (e.type === 'text' && completedAtFirstText === undefined) completedAtFirstText = sim().requests.at(-1)?.completed;
      });
      expect(error).toBeNull();
      expect(texts.length).toBeGreaterThan(5);
      expect(completedAtFirstText).toBe(false);
      expect(sim().requests.at(-1)?.completed).toBe(true);
    });

    it('sends the model, sampling settings, tools and messages of every role over the wire', async () => {
      const request: LlmRequest = {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are a phone receptionist for Acme Dental. Be brief.' },
          { role: 'user', content: 'Can I book a cleaning on Friday?' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'call_abc123', name: 'check_slots', arguments: '{"day":"friday"}' }] },
          { role: 'tool', toolCallId: 'call_abc123', content: '{"slots":["10:00","14:30"]}' },
          { role: 'assistant', content: 'We have 10:00 or 14:30.' },
          { role: 'user', content: 'Ten, please.' },
        ],
        tools: [{ name: 'check_slots', description: 'List free slots', parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] } }],
        temperature: 0.4,
        maxTokens: 300,
        topP: 0.9,
        frequencyPenalty: 0.5,
        presencePenalty: 0.25,
      };
      const { error } = await collect(target.provider().stream(request, signal()));
      expect(error).toBeNull();
      const expected: LlmRequest = { ...request };
      for (const key of target.unsupported ?? []) delete expected[key];
      expect(target.lastWireRequest()).toEqual(expected);
    });

    it('assembles a tool call from argument fragments into one event with parseable JSON', async () => {
      const args = { day: 'friday', service: 'cleaning', patient: { name: 'Ada Lovelace', phone: '+15551234567' } };
      sim().addReply({ match: 'book', toolCall: { name: 'book_slot', arguments: args } });
      const request: LlmRequest = { ...user('Please book me in'), tools: [{ name: 'book_slot', description: 'Book a slot', parameters: { type: 'object' } }] };
      const { events, error } = await collect(target.provider().stream(request, signal()));
      expect(error).toBeNull();
      const calls = events.flatMap((e) => (e.type === 'tool-call' ? [e.call] : []));
      expect(calls).toHaveLength(1);
      expect(calls[0]?.name).toBe('book_slot');
      expect(calls[0]?.id).not.toBe('');
      expect(JSON.parse(calls[0]?.arguments ?? '')).toEqual(args);
      expect(events.at(-1)).toEqual({ type: 'done', finishReason: 'tool_calls' });
    });

    it('reports input and output token usage before done', async () => {
      const { events, error } = await collect(target.provider().stream(user('How much is a cleaning?'), signal()));
      expect(error).toBeNull();
      const usage = events.findIndex((e) => e.type === 'usage');
      expect(usage).toBeGreaterThanOrEqual(0);
      expect(usage).toBeLessThan(events.findIndex((e) => e.type === 'done'));
      const u = events[usage] as Extract<LlmEvent, { type: 'usage' }>;
      expect(u.inputTokens).toBeGreaterThan(0);
      expect(u.outputTokens).toBeGreaterThan(0);
    });

    it('stops mid-stream on abort with an AbortError, and the server sees the client go away', async () => {
      sim().addReply({ match: 'long', reply: 'This is a long answer that would take quite a while to read out in full to the caller.' });
      sim().setFaults({ interTokenDelayMs: 30 });
      const controller = new AbortController();
      const { texts, error } = await collect(target.provider().stream(user('Give me the long version'), controller.signal), (e) => {
        if (e.type === 'text') controller.abort();
      });
      expect((error as Error).name).toBe('AbortError');
      expect(texts).toHaveLength(1);
      await vi.waitFor(() => expect(sim().requests.at(-1)?.clientDisconnected).toBe(true), { timeout: 2_000 });
      expect(sim().requests.at(-1)?.completed).toBe(false);
    });

    it('cancels the HTTP request on abort even while the caller is not reading', async () => {
      sim().addReply({ match: 'long', reply: 'This is a long answer that would take quite a while to read out in full to the caller.' });
      sim().setFaults({ interTokenDelayMs: 30 });
      const controller = new AbortController();
      const iterator = target.provider().stream(user('Give me the long version'), controller.signal)[Symbol.asyncIterator]();
      expect((await iterator.next()).value).toMatchObject({ type: 'text' });
      controller.abort();
      await vi.waitFor(() => expect(sim().requests.at(-1)?.clientDisconnected).toBe(true), { timeout: 2_000 });
      await expect(iterator.next()).rejects.toMatchObject({ name: 'AbortError' });
    });

    it('aborts a request that is still waiting for its first token', async () => {
      sim().setFaults({ hang: true });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const { error } = await collect(target.provider().stream(user('Hello'), controller.signal));
      expect((error as Error).name).toBe('AbortError');
      await vi.waitFor(() => expect(sim().requests.at(-1)?.clientDisconnected).toBe(true), { timeout: 2_000 });
    });

    it('rejects at once with an AbortError when the signal is already aborted', async () => {
      const before = sim().requests.length;
      const { events, error } = await collect(target.provider().stream(user('Hello'), AbortSignal.abort()));
      expect((error as Error).name).toBe('AbortError');
      expect(events).toEqual([]);
      expect(sim().requests.length).toBe(before);
    });

    it('fails with a non-retryable llm.unauthorized for a wrong API key', async () => {
      const { events, error } = await collect(target.provider({ apiKey: 'sk-wrong-key-000000' }).stream(user('Hello'), signal()));
      expect(events).toEqual([]);
      expect(expectProviderError(error, 'llm.unauthorized', false).status).toBe(401);
    });

    it('fails with a retryable llm.http_500 when the server answers 500', async () => {
      sim().setFaults({ failNext: { status: 500, count: 1 } });
      const { events, error } = await collect(target.provider().stream(user('Hello'), signal()));
      expect(events).toEqual([]);
      expect(expectProviderError(error, 'llm.http_500', true).status).toBe(500);
    });

    it('fails with a retryable llm.rate_limited on 429', async () => {
      sim().setFaults({ failNext: { status: 429, count: 1 } });
      const { error } = await collect(target.provider().stream(user('Hello'), signal()));
      expect(expectProviderError(error, 'llm.rate_limited', true).status).toBe(429);
    });

    it('turns an error event in the middle of the stream into llm.stream_error after the text sent so far', async () => {
      sim().addReply({ match: 'status', reply: 'Your order is on its way and should arrive tomorrow.' });
      sim().setFaults({ midStreamErrorAfterTokens: 2 });
      const { texts, events, error } = await collect(target.provider().stream(user('Order status?'), signal()));
      expect(texts).toEqual(['Your', ' order']);
      expect(events.some((e) => e.type === 'done')).toBe(false);
      expectProviderError(error, 'llm.stream_error', true);
    });

    it('turns a dropped connection into a retryable llm.connection_lost', async () => {
      sim().addReply({ match: 'status', reply: 'Your order is on its way and should arrive tomorrow.' });
      sim().setFaults({ dropAfterTokens: 3 });
      const { texts, events, error } = await collect(target.provider().stream(user('Order status?'), signal()));
      expect(texts.join('')).toBe('Your order is');
      expect(events.some((e) => e.type === 'done')).toBe(false);
      expectProviderError(error, 'llm.connection_lost', true);
    });

    it('gives up on a server that never answers with a retryable llm.timeout', async () => {
      sim().setFaults({ hang: true });
      const started = Date.now();
      const { error } = await collect(target.provider({ timeoutMs: 300 }).stream(user('Hello'), signal()));
      expectProviderError(error, 'llm.timeout', true);
      expect(Date.now() - started).toBeLessThan(3_000);
      await vi.waitFor(() => expect(sim().requests.at(-1)?.clientDisconnected).toBe(true), { timeout: 2_000 });
    });

    it('times out a stream that stalls between tokens with llm.timeout', async () => {
      sim().addReply({ match: 'slow', reply: 'One two three four.' });
      sim().setFaults({ interTokenDelayMs: 5_000 });
      const { texts, error } = await collect(target.provider({ timeoutMs: 300 }).stream(user('Be slow'), signal()));
      expect(texts).toEqual(['One']);
      expectProviderError(error, 'llm.timeout', true);
    });
  });
}
