/**
 * Retry with backoff for any LlmProvider (STYLE.md §4: written once, as a wrapper around the
 * interface, never inside an adapter).
 */
import { ProviderError, abortError } from './provider-error.js';
import type { LlmEvent, LlmProvider, LlmRequest } from './types.js';

export interface LlmRetryOptions {
  /** Total attempts including the first. Default 3. */
  attempts?: number;
  /** Backoff before the second attempt, in ms; doubles after each failure. Default 200. */
  baseDelayMs?: number;
  /** Upper bound of one backoff, in ms. Default 2 000: past that the caller has been silent too long. */
  maxDelayMs?: number;
  /** Called before each backoff with the error and the 1-based number of the attempt that failed. */
  onRetry?: (err: ProviderError, attempt: number) => void;
}

/**
 * Wraps `provider` so that a failed completion is tried again, up to `attempts` times, when
 * the failure is a retryable {@link ProviderError} **and no event has been yielded yet**:
 * once the caller has text, a second attempt would make the agent say it twice, so the
 * error goes up and the session decides. Backoff is exponential with jitter: before attempt
 * n+1 it waits a random time in [d/2, d], d = min(maxDelayMs, baseDelayMs · 2^(n-1)).
 *
 * Aborting the signal ends a backoff at once and rejects with an `AbortError`; a running
 * attempt is cancelled by the inner provider, which sees the same signal.
 */
export function withLlmRetry(provider: LlmProvider, opts: LlmRetryOptions = {}): LlmProvider {
  const attempts = Math.max(1, opts.attempts ?? 3);
  const baseDelayMs = opts.baseDelayMs ?? 200;
  const maxDelayMs = opts.maxDelayMs ?? 2_000;

  async function* run(request: LlmRequest, signal: AbortSignal): AsyncGenerator<LlmEvent> {
    for (let attempt = 1; ; attempt++) {
      let yielded = false;
      try {
        for await (const event of provider.stream(request, signal)) {
          yielded = true;
          yield event;
        }
        return;
      } catch (err) {
        // Once the caller aborted, whatever the attempt died of, the answer is an AbortError.
        if (signal.aborted) throw abortError(signal);
        if (yielded || !(err instanceof ProviderError) || !err.retryable || attempt >= attempts) throw err;
        opts.onRetry?.(err, attempt);
        const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
        await abortableSleep(Math.round(ceiling / 2 + Math.random() * (ceiling / 2)), signal);
      }
    }
  }

  return { name: provider.name, stream: (request, signal) => run(request, signal) };
}

/** Resolves after `ms`, or rejects with an AbortError as soon as `signal` aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
