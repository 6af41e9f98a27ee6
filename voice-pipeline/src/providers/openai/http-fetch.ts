/**
 * The transport under the `openai` SDK (its documented `fetch` option): requests over
 * node:http/https with keep-alive agents, answered with a `Response` whose `body` is the
 * Node stream of the response itself.
 *
 * Why not Node's own `fetch`: a streamed reply is one SSE event per token, each its own
 * socket read. Through `fetch` every read also passes undici's fetch machinery and a
 * WHATWG byte stream (a promise or more per read) before the SDK sees it; the SDK iterates
 * any body that is async-iterable as it is (`ReadableStreamToAsyncIterable`), so a Node
 * stream skips that layer. Against the simulator in a process of its own (600 streamed
 * replies of ~30 tokens a run, 3 runs each, alternating) a request cost 4.0-4.7 ms of CPU
 * over `fetch` and 2.9-3.1 ms over this (README "Benchmarks").
 *
 * Only what the SDK's chat requests use is carried here: a string or byte body, to an
 * http(s) URL. Anything else (a `Request`, a form or stream body) goes to Node's `fetch`.
 * Redirects are not followed (the API does not redirect; a 3xx is an error status to the
 * SDK). No `accept-encoding` is sent; a compressed answer is still decompressed.
 */
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { abortError } from '../provider-error.js';

/** One pool per protocol for the thread: the SDK's requests reuse connections, as with `fetch`. */
const AGENTS = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
} as const;

/** A `fetch` for `new OpenAI({ fetch })`. */
export function httpFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const body = init.body;
  if (typeof input !== 'string' && !(input instanceof URL)) return fetch(input, init);
  if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) return fetch(input, init);
  const url = new URL(input);
  const protocol = url.protocol;
  if (protocol !== 'http:' && protocol !== 'https:') return fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const headers: Record<string, string> = {};
  (init.headers instanceof Headers ? init.headers : new Headers(init.headers)).forEach((value, name) => (headers[name] = value));
  if (body !== undefined && body !== null) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  return new Promise<Response>((resolve, reject) => {
    let answer: Readable | null = null;
    const request = (protocol === 'https:' ? https : http).request(url, { method: init.method ?? 'GET', headers, agent: AGENTS[protocol] }, (res) => {
      answer = decoded(res);
      resolve(response(res, answer, url));
    });
    // As `fetch` does: an abort fails the request before the answer and the body's reading after it, with an AbortError.
    const onAbort = (): void => {
      const err = abortError(signal!);
      if (answer) answer.destroy(err);
      request.destroy(err);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.once('close', () => signal?.removeEventListener('abort', onAbort));
    // Before the answer: the SDK turns this into a connection error (a timeout or the caller's abort when an AbortError).
    request.on('error', reject);
    request.end(body ?? undefined);
  });
}

/** The parts of a `Response` the SDK reads; `body` is the answer's Node stream (async-iterable). */
function response(res: IncomingMessage, body: Readable, url: URL): Response {
  const status = res.statusCode ?? 0;
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const text = async (): Promise<string> => {
    const parts: Buffer[] = [];
    for await (const part of body) parts.push(part as Buffer);
    return Buffer.concat(parts).toString('utf8');
  };
  const answer = {
    status,
    statusText: res.statusMessage ?? '',
    ok: status >= 200 && status < 300,
    headers,
    url: url.href,
    body,
    text,
    json: async (): Promise<unknown> => JSON.parse(await text()),
  };
  // Not a WHATWG Response (its body is a Node stream, see the file's comment): the SDK reads only these members.
  return answer as unknown as Response;
}

/** The answer's bytes as the server meant them: undone `content-encoding` (gzip, deflate, br), else the stream itself. */
function decoded(res: IncomingMessage): Readable {
  const encoding = (res.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? zlib.createGunzip() : encoding === 'deflate' ? zlib.createInflate() : encoding === 'br' ? zlib.createBrotliDecompress() : null;
  if (!decoder) return res;
  pipeline(res, decoder, () => {
    // An error reaches the reader through `decoder`, which pipeline destroys with it.
  });
  return decoder;
}
