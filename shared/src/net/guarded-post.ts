import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import { OutboundBlockedError } from './outbound-guard.js';
import type { OutboundGuard } from './outbound-guard.js';

/** What came back from a {@link guardedPost}, whatever the status (a 500 or a 302 is a result, not an error). */
export interface GuardedPostResult {
  /** HTTP status code; redirects are never followed. */
  status: number;
  /** From the call until the response body was read (or abandoned past its cap), in ms. */
  latencyMs: number;
  /** First ≤ 1 KiB of the response body as UTF-8 text (a character cut at the limit is dropped). */
  bodySnippet: string;
}

/**
 * Why a {@link guardedPost} got no HTTP response. `blocked`: the outbound guard refused the
 * target (the message names the reason, e.g. `10.0.0.5 is a private address`); `dns`: the
 * host did not resolve; `connect`: no TCP connection (refused, unreachable);
 * `timeout`: the deadline passed, or the caller's signal aborted; `tls`: the TLS handshake
 * failed; `protocol`: the connection broke or the peer did not speak HTTP after connecting.
 * The message is one line, never a stack; the underlying error is `cause`.
 */
export class OutboundRequestError extends Error {
  override readonly name = 'OutboundRequestError';
  readonly kind: 'blocked' | 'dns' | 'connect' | 'timeout' | 'tls' | 'protocol';
  /** From the call until the failure, in ms. */
  readonly latencyMs: number;

  constructor(kind: OutboundRequestError['kind'], message: string, latencyMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
    this.latencyMs = latencyMs;
  }
}

const SNIPPET_BYTES = 1024;
/** Past this much response body the connection is dropped instead of drained for reuse. */
const DRAIN_LIMIT_BYTES = 64 * 1024;
/**
 * Idle keep-alive sockets are closed after this long: below the 5 s keep-alive timeout of
 * Node and many proxies, so a socket is not reused just as the server closes it.
 */
const IDLE_SOCKET_MS = 4_000;

type Agents = { http: http.Agent; https: https.Agent };
// One pair of agents per guard: a socket opened under one guard's allowlist is never
// reused by a guard that would have refused its address.
const agentsByGuard = new WeakMap<OutboundGuard, Agents>();

function agentsFor(guard: OutboundGuard): Agents {
  let agents = agentsByGuard.get(guard);
  if (!agents) {
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
    agents = { http: new http.Agent(options), https: new https.Agent(options) };
    agentsByGuard.set(guard, agents);
  }
  return agents;
}

/** How far a request got, to tell a refused connection from a failed handshake or a broken reply. */
type Phase = 'connecting' | 'handshake' | 'connected';

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'ENODATA', 'ESERVFAIL']);

function classify(err: unknown, phase: Phase): OutboundRequestError['kind'] {
  if (err instanceof OutboundBlockedError) return err.reason === 'dns' ? 'dns' : 'blocked';
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (DNS_CODES.has(code)) return 'dns';
  if (code.startsWith('HPE_')) return 'protocol';
  if (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || /CERT|SSL/.test(code)) return 'tls';
  if (phase === 'connecting') return 'connect';
  return phase === 'handshake' ? 'tls' : 'protocol';
}

function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0] || 'request failed';
}

/**
 * POSTs `body` with `headers` to `url` through `guard`, for calls made on a customer's
 * behalf (webhook deliveries now). The guard judges an IP-literal host before connecting
 * and a host name at connect time through `guard.connectLookup`, so the address connected
 * to is the address checked. One deadline, `timeoutMs`, covers DNS, connect, TLS, response
 * headers and reading the body (only the first 1 KiB is kept). Redirects are not followed.
 * Aborting `signal` destroys the request and rejects with kind `timeout`.
 *
 * Resolves with any HTTP status; rejects only with {@link OutboundRequestError}.
 * `content-length` is added unless given. Uses per-guard keep-alive agents.
 */
export function guardedPost(
  url: string,
  opts: { guard: OutboundGuard; headers: Record<string, string>; body: string | Buffer; timeoutMs: number; signal?: AbortSignal },
): Promise<GuardedPostResult> {
  const startedAt = performance.now();
  const elapsedMs = () => Math.round(performance.now() - startedAt);

  return new Promise<GuardedPostResult>((resolve, reject) => {
    let settled = false;
    let request: http.ClientRequest | undefined;
    let phase: Phase = 'connecting';

    const fail = (kind: OutboundRequestError['kind'], message: string, cause?: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      request?.destroy();
      reject(new OutboundRequestError(kind, message, elapsedMs(), { cause }));
    };
    const succeed = (result: Omit<GuardedPostResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve({ ...result, latencyMs: elapsedMs() });
    };

    const timer = setTimeout(() => fail('timeout', `no complete response within ${opts.timeoutMs} ms`), opts.timeoutMs);
    const onAbort = () => fail('timeout', 'aborted by the caller', opts.signal?.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    function cleanup() {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
    if (opts.signal?.aborted) return onAbort();

    const start = async () => {
      let target: URL | null = null;
      try {
        target = new URL(url);
      } catch {
        // guard.check below rejects it as an invalid URL (kind `blocked`).
      }
      // Node skips `lookup` for an IP-literal host, so the guard judges an IP literal (and a
      // bad URL or scheme) here, without DNS. A host name is judged only at connect time, by
      // connectLookup: checking it here too would resolve twice and could see other answers.
      if (!target || isIP(target.hostname.replace(/^\[|\]$/g, '')) !== 0 || (target.protocol !== 'http:' && target.protocol !== 'https:')) {
        await opts.guard.check(target ?? url);
      }
      if (settled || !target) return;
      const body = typeof opts.body === 'string' ? Buffer.from(opts.body, 'utf8') : opts.body;
      const headers: Record<string, string> = { ...opts.headers };
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) headers['content-length'] = String(body.length);
      const secure = target.protocol === 'https:';
      const agents = agentsFor(opts.guard);
      const send = secure ? https.request : http.request;
      request = send(target, { method: 'POST', headers, agent: secure ? agents.https : agents.http, lookup: opts.guard.connectLookup });
      trackPhase(request, secure, (next) => (phase = next));
      request.on('error', (err) => fail(classify(err, phase), oneLine(err), err));
      request.on('response', (res) => readSnippet(res, succeed, (err) => fail('protocol', oneLine(err), err)));
      request.end(body);
    };
    start().catch((err: unknown) => fail(classify(err, phase), oneLine(err), err));
  });
}

/** Reports `handshake` once TCP is up on an https request, and `connected` once it can speak HTTP. */
function trackPhase(request: http.ClientRequest, secure: boolean, set: (phase: Phase) => void): void {
  request.on('socket', (socket: Socket) => {
    // A reused keep-alive socket is already connected (and past its TLS handshake).
    if (!socket.connecting) return set('connected');
    socket.once('connect', () => set(secure ? 'handshake' : 'connected'));
    if (secure) socket.once('secureConnect', () => set('connected'));
  });
}

/**
 * Keeps the first 1 KiB of the body, drains the rest (so the socket can be reused) up to
 * {@link DRAIN_LIMIT_BYTES}, beyond which the response is dropped and the result returned.
 */
function readSnippet(
  res: http.IncomingMessage,
  done: (result: Omit<GuardedPostResult, 'latencyMs'>) => void,
  broken: (err: Error) => void,
): void {
  const status = res.statusCode ?? 0;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let seenBytes = 0;
  const finish = () => {
    // StringDecoder holds back a multi-byte character cut at the limit instead of emitting U+FFFD.
    done({ status, bodySnippet: new StringDecoder('utf8').write(Buffer.concat(kept)) });
  };
  res.on('data', (chunk: Buffer) => {
    seenBytes += chunk.length;
    if (keptBytes < SNIPPET_BYTES) {
      const part = chunk.subarray(0, SNIPPET_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (seenBytes > DRAIN_LIMIT_BYTES) {
      finish();
      res.destroy();
    }
  });
  res.on('end', finish);
  res.on('error', broken);
  res.on('close', () => {
    if (!res.complete) broken(new Error('the connection closed before the response body was complete'));
  });
}
