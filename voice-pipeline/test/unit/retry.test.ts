import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProviderError } from '../../src/providers/provider-error.js';
import { withLlmRetry } from '../../src/providers/retry.js';
import type { LlmEvent, LlmProvider, LlmRequest } from '../../src/providers/types.js';

/** One scripted attempt: the events it yields, then the error it throws (if any). */
interface Attempt {
  events?: LlmEvent[];
  error?: unknown;
}

/** An in-memory LlmProvider that plays one script per call; it stands in for an adapter so the wrapper alone is tested. */
function fakeProvider(attempts: Attempt[]): LlmProvider & { calls: number } {
  const fake = {
    name: 'fake',
    calls: 0,
    stream(_request: LlmRequest, signal: AbortSignal): AsyncIterable<LlmEvent> {
      const script = attempts[fake.calls++] ?? { error: new Error('no more scripted attempts') };
      return (async function* () {
        signal.throwIfAborted();
        for (const e of script.events ?? []) yield e;
        if (script.error !== undefined) throw script.error;
      })();
    },
  };
  return fake;
}

const err = (code: string, retryable: boolean): ProviderError => new ProviderError({ provider: 'fake', capability: 'llm', code, message: code, retryable });
const request: LlmRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const reply: LlmEvent[] = [
  { type: 'text', text: 'Hello' },
  { type: 'done', finishReason: 'stop' },
];

/** Starts draining immediately; the result settles once fake time has been advanced far enough. */
function drain(provider: LlmProvider, signal = new AbortController().signal) {
  const events: LlmEvent[] = [];
  const result = (async () => {
    for await (const e of provider.stream(request, signal)) events.push(e);
  })().then(
    () => ({ events, error: null as unknown }),
    (error: unknown) => ({ events, error }),
  );
  return result;
}

describe('withLlmRetry', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('retries a retryable error raised before any event and streams the next attempt', async () => {
    const inner = fakeProvider([{ error: err('llm.http_500', true) }, { events: reply }]);
    const onRetry = vi.fn();
    const result = drain(withLlmRetry(inner, { onRetry }));
    await vi.advanceTimersByTimeAsync(200);
    expect(await result).toEqual({ events: reply, error: null });
    expect(inner.calls).toBe(2);
    expect(onRetry).toHaveBeenCalledExactlyOnceWith(expect.objectContaining({ code: 'llm.http_500' }), 1);
  });

  it('never retries once an event has been yielded, so the caller does not hear text twice', async () => {
    const dropped = err('llm.connection_lost', true);
    const inner = fakeProvider([{ events: [{ type: 'text', text: 'Hel' }], error: dropped }, { events: reply }]);
    const result = await drain(withLlmRetry(inner));
    expect(result).toEqual({ events: [{ type: 'text', text: 'Hel' }], error: dropped });
    expect(inner.calls).toBe(1);
  });

  it('does not retry a non-retryable ProviderError', async () => {
    const unauthorized = err('llm.unauthorized', false);
    const inner = fakeProvider([{ error: unauthorized }, { events: reply }]);
    expect((await drain(withLlmRetry(inner))).error).toBe(unauthorized);
    expect(inner.calls).toBe(1);
  });

  it('does not retry errors that are not ProviderErrors', async () => {
    const bug = new TypeError('adapter bug');
    const inner = fakeProvider([{ error: bug }, { events: reply }]);
    expect((await drain(withLlmRetry(inner))).error).toBe(bug);
    expect(inner.calls).toBe(1);
  });

  it('gives up after `attempts` tries and throws the last error', async () => {
    const last = err('llm.http_503', true);
    const inner = fakeProvider([{ error: err('llm.http_500', true) }, { error: err('llm.timeout', true) }, { error: last }, { events: reply }]);
    const result = drain(withLlmRetry(inner, { attempts: 3, baseDelayMs: 100 }));
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await result).error).toBe(last);
    expect(inner.calls).toBe(3);
  });

  // Math.random pinned at the ends of its range: delays are then exactly d/2 or d, d = 100, 200, min(300, 400).
  it.each([
    { random: 0, delays: [50, 100, 150] },
    { random: 0.99999, delays: [100, 200, 300] },
  ])('backs off exponentially with jitter in [d/2, d], capped at maxDelayMs (random=$random)', async ({ random, delays }) => {
    vi.spyOn(Math, 'random').mockReturnValue(random);
    const inner = fakeProvider([{ error: err('a', true) }, { error: err('b', true) }, { error: err('c', true) }, { events: reply }]);
    const result = drain(withLlmRetry(inner, { attempts: 4, baseDelayMs: 100, maxDelayMs: 300 }));
    for (const [i, delay] of delays.entries()) {
      await vi.advanceTimersByTimeAsync(delay - 2);
      expect(inner.calls).toBe(i + 1);
      await vi.advanceTimersByTimeAsync(2);
      expect(inner.calls).toBe(i + 2);
    }
    expect((await result).events).toEqual(reply);
  });

  it('ends a backoff at once with an AbortError when the signal aborts, without another attempt', async () => {
    const inner = fakeProvider([{ error: err('llm.http_500', true) }, { events: reply }]);
    const controller = new AbortController();
    const result = drain(withLlmRetry(inner, { baseDelayMs: 10_000 }), controller.signal);
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    const { error } = await result;
    expect((error as Error).name).toBe('AbortError');
    await vi.advanceTimersByTimeAsync(20_000);
    expect(inner.calls).toBe(1);
  });

  it('reports an AbortError, not the attempt error, when the caller aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    // An adapter that reports its torn connection instead of the abort that caused it.
    const inner: LlmProvider = {
      name: 'sloppy',
      stream: () => ({
        [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err('llm.connection_lost', true)) }),
      }),
    };
    const { error } = await drain(withLlmRetry(inner), controller.signal);
    expect((error as Error).name).toBe('AbortError');
  });

  it('keeps the inner provider name', () => {
    expect(withLlmRetry(fakeProvider([])).name).toBe('fake');
  });
});
