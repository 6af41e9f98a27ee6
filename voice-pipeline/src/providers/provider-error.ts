/** Which capability a provider failure belongs to. */
export type Capability = 'stt' | 'llm' | 'tts' | 'telephony';

/**
 * Every provider failure, whatever the SDK threw (STYLE.md §4). `retryable` is true for
 * network failures, timeouts, 5xx, 408 and 429; other 4xx are the caller's fault.
 */
export class ProviderError extends Error {
  readonly provider: string;
  readonly capability: Capability;
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  /** Stable machine code for logs and the `Error` event (`stt.connection_lost`, `llm.http_500`, `tts.timeout` …). */
  readonly code: string;

  constructor(init: { provider: string; capability: Capability; code: string; message: string; retryable: boolean; status?: number; requestId?: string; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ProviderError';
    this.provider = init.provider;
    this.capability = init.capability;
    this.code = init.code;
    this.retryable = init.retryable;
    this.status = init.status;
    this.requestId = init.requestId;
  }
}

/** The retry rule for an HTTP status: 5xx, 408 and 429 are worth another try. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * What an aborted provider call rejects with: the signal's reason when it is already an
 * AbortError (an abort passed on from the caller's turn), else a new AbortError, as `fetch` does.
 */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('The operation was aborted.', 'AbortError');
}
