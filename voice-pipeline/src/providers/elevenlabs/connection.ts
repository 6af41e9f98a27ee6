/**
 * What both ElevenLabs WebSocket adapters share (`tts.ts` on `stream-input`,
 * `multi-context-tts.ts` on `multi-stream-input`): the handshake with its failures, the
 * mapping of closes and error messages to ProviderErrors, the chunk schedule, their options
 * and the socket URL of a turn's stream options.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { ProviderError, isRetryableStatus } from '../provider-error.js';
import type { TtsStreamOptions } from '../types.js';
import type { ElevenLabsTtsOptions } from './tts.js';
import { toWebSocketBase } from './wire.js';

export const PROVIDER = 'elevenlabs';
/** Lowest-latency model (reference/tts.md §1 lists it first for real-time use). */
export const DEFAULT_MODEL = 'eleven_flash_v2_5';
/**
 * The default schedule `[120, 160, 250, 290]` holds back the first 120 characters before
 * generating anything. An agent reply's first sentence is often longer than 50 characters
 * but shorter than 120, and we `flush()` at each sentence end anyway, so a schedule starting
 * at the documented minimum (50) lets a long first sentence start speaking sooner; the later
 * values grow again because longer chunks give better prosody.
 */
export const CHUNK_LENGTH_SCHEDULE = [50, 90, 120, 150];
/** How long a graceful close may take before the socket is destroyed. */
export const CLOSE_GRACE_MS = 1000;

export type ResolvedTtsOptions = Required<Omit<ElevenLabsTtsOptions, 'model'>> & { model: string };

/** The adapter's options with their defaults; `inactivityTimeoutMs` defaults to the adapter's own. */
export function resolveTtsOptions(options: ElevenLabsTtsOptions, inactivityTimeoutMs: number): ResolvedTtsOptions {
  return {
    apiKey: options.apiKey,
    baseUrl: toWebSocketBase(options.baseUrl),
    model: options.model ?? DEFAULT_MODEL,
    firstByteTimeoutMs: options.firstByteTimeoutMs ?? 5000,
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    inactivityTimeoutMs: options.inactivityTimeoutMs ?? inactivityTimeoutMs,
  };
}

/**
 * The socket URL for `options` on the endpoint at `path` (`streamInputPath` or
 * `multiStreamInputPath` of the voice): model, output format, language and
 * `inactivity_timeout` in whole seconds (the service takes 1–180), which it also returns.
 */
export function socketUrl(opts: ResolvedTtsOptions, path: string, options: TtsStreamOptions): { url: string; inactivityTimeoutS: number } {
  const inactivityTimeoutS = Math.min(180, Math.max(1, Math.ceil(opts.inactivityTimeoutMs / 1000)));
  const query = new URLSearchParams({ model_id: options.model ?? opts.model, output_format: options.outputFormat, inactivity_timeout: String(inactivityTimeoutS) });
  if (options.language !== undefined) query.set('language_code', options.language);
  return { url: `${opts.baseUrl}${path}?${query.toString()}`, inactivityTimeoutS };
}

/**
 * Waits for the upgrade. Rejects with a ProviderError (`tts.unauthorized`, `tts.http_<status>`,
 * `tts.timeout`, `tts.connection_failed`) or, if `signal` aborts first, with an `AbortError`;
 * the socket is terminated then. Without `signal` only the timeout ends the wait (a call's
 * multi-context socket, which no one turn may abort): no listener is added to a signal shared
 * by every call's socket, which at 11 sockets connecting at once made Node warn of a listener leak.
 */
export function connect(ws: WebSocket, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(tsError('tts.timeout', `no WebSocket connection within ${timeoutMs} ms`, true)), timeoutMs);
    const onAbort = (): void => fail(abortError());
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      ws.removeListener('open', onOpen);
      ws.removeListener('error', onError);
      ws.removeListener('unexpected-response', onResponse);
    };
    const fail = (err: unknown): void => {
      done();
      ws.terminate();
      reject(err);
    };
    const onOpen = (): void => {
      done();
      resolve();
    };
    const onError = (err: Error): void => fail(tsError('tts.connection_failed', `WebSocket connection failed: ${err.message}`, true, { cause: err }));
    const onResponse = (_req: unknown, res: IncomingMessage): void => {
      // A rejected upgrade: 401/403 for a bad key (reference/tts.md §1.2 says auth may fail here or with a 1008 close).
      const status = res.statusCode ?? 0;
      const requestId = headerValue(res.headers['request-id']);
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 2048) body += chunk;
      });
      res.on('end', () => {
        const detail = body.length > 0 ? `: ${body.slice(0, 300)}` : '';
        if (status === 401 || status === 403) {
          fail(tsError('tts.unauthorized', `ElevenLabs rejected the API key (HTTP ${status})${detail}`, false, { status, requestId }));
        } else {
          fail(tsError(`tts.http_${status}`, `ElevenLabs refused the WebSocket upgrade (HTTP ${status})${detail}`, isRetryableStatus(status), { status, requestId }));
        }
      });
    };
    ws.on('open', onOpen);
    ws.on('error', onError);
    ws.on('unexpected-response', onResponse);
  });
}

/** `error` values that describe a passing condition rather than a bad request or account. */
const RETRYABLE_ERRORS = new Set(['rate_limited', 'too_many_concurrent_requests', 'system_busy', 'internal_error', 'server_error', 'timeout']);

/** Maps an unexpected close to a ProviderError (reference/tts.md §1.2: 1008 with a reason, 1009 for a bad voice/model pair). */
export function closeError(code: number, reason: string): ProviderError {
  const why = reason.length > 0 ? `${code} ${reason}` : String(code);
  if (code === 1008) {
    if (/auth|api[ _-]?key|unauthori[sz]ed|credential|permission/i.test(reason)) {
      return tsError('tts.unauthorized', `ElevenLabs rejected the API key (close ${why})`, false);
    }
    if (/inactiv|timeout|have not received/i.test(reason)) {
      return tsError('tts.inactivity_timeout', `ElevenLabs closed an idle stream (close ${why})`, true);
    }
    return tsError('tts.policy_violation', `ElevenLabs closed the stream (close ${why})`, false);
  }
  if (code === 1009) return tsError('tts.invalid_request', `ElevenLabs rejected the voice/model (close ${why})`, false);
  return tsError('tts.connection_lost', `ElevenLabs connection lost (close ${why})`, true);
}

/** An `error` message from the service (reference/tts.md §1.2): `tts.<error>`, retryable for passing conditions. */
export function serviceError(error: string, message: string): ProviderError {
  return tsError(`tts.${error.toLowerCase().replace(/[^a-z0-9_]+/g, '_')}`, `ElevenLabs error ${error}: ${message}`, RETRYABLE_ERRORS.has(error));
}

export function tsError(code: string, message: string, retryable: boolean, extra: { status?: number; requestId?: string | undefined; cause?: unknown } = {}): ProviderError {
  return new ProviderError({ provider: PROVIDER, capability: 'tts', code, message, retryable, ...extra });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function abortError(): Error {
  return new DOMException('ElevenLabs TTS open was aborted', 'AbortError');
}
