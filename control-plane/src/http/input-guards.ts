import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unstorableTextReason } from '../db/storable-text.js';
import { newId } from '@vap/shared';
import type { ErrorSlug, FieldError } from '@vap/shared';
import { PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from './problem.js';
import { RequestValidationError } from './validation.js';

/** At most this many fields are named in one answer. */
const MAX_NAMED = 20;

/** Buffers and streams (a multipart file) are data, not fields; everything else is walked by its own keys. */
const isData = (v: object): boolean => ArrayBuffer.isView(v) || typeof (v as { pipe?: unknown }).pipe === 'function';

/**
 * The fields of `value` Postgres cannot store (a NUL, an unpaired surrogate:
 * {@link unstorableTextReason}), each named by its dotted path as validation errors name
 * fields (`persona.name`, `tags.0`, `''` for the value itself; a key that is itself
 * unstorable names its field, escaped); at most `limit`. Iterative, so any nesting
 * `JSON.parse` accepted within the body limit is walked without exhausting the stack.
 * Objects are walked by their own enumerable keys whatever their prototype (the router's
 * params and the query parser's objects have their own), each once (a multipart part refers
 * back to its fields); Buffers and streams are skipped.
 */
export function unstorableFields(value: unknown, limit = MAX_NAMED): FieldError[] {
  if (flatAndStorable(value)) return [];
  const found: FieldError[] = [];
  // `badKey`: why the key that leads to `v` cannot be stored (reported in the order of the fields).
  const stack: { v: unknown; path: string; badKey: string | null }[] = [{ v: value, path: '', badKey: null }];
  const seen = new WeakSet<object>();
  while (stack.length > 0 && found.length < limit) {
    const { v, path, badKey } = stack.pop()!;
    if (badKey !== null) found.push({ field: path, message: `its key ${badKey}` });
    if (typeof v === 'string') {
      const reason = unstorableTextReason(v);
      if (reason !== null) found.push({ field: path, message: reason });
      continue;
    }
    if (v === null || typeof v !== 'object' || isData(v) || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: join(path, String(i)), badKey: null });
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const badKey = unstorableTextReason(key);
      stack.push({ v: (v as Record<string, unknown>)[key], path: join(path, badKey === null ? key : escaped(key)), badKey });
    }
  }
  return found.slice(0, limit);
}

/**
 * Whether `value` is an object with no object inside it whose keys and text values can all be
 * stored: a request's path parameters and query string nearly always, which then need no walk
 * (no stack, no set of objects seen: every API request passes here twice or three times).
 * False sends the value to the full walk, which names what is wrong, if anything.
 */
function flatAndStorable(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || isData(value)) return false;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (unstorableTextReason(key) !== null) return false;
    const v = record[key];
    if (typeof v === 'string') {
      if (unstorableTextReason(v) !== null) return false;
    } else if (v !== null && typeof v === 'object') return false;
  }
  return true;
}

const join = (path: string, key: string): string => (path === '' ? key : `${path}.${key}`);

/** A key as JSON would write it, without the quotes: `\u0000`, `\ud800` readable in a field name. */
const escaped = (key: string): string => JSON.stringify(key).slice(1, -1);

const CONTEXTS = ['params', 'querystring', 'body'] as const;

/**
 * Refuses, before validation, any path parameter, query parameter or body string (or key)
 * of a REST API request (`/api/…`) that Postgres cannot store (a NUL, an unpaired surrogate),
 * with a 422 naming each such field and why: such a value would otherwise fail in the
 * database as a 500. Carriers' webhooks are left to their routes, which check the carrier's
 * signature first: a refusal there would drop a call or a message the carrier relayed.
 */
export function refuseUnstorableText(app: FastifyInstance): void {
  app.addHook('preValidation', (req, _reply, done) => {
    if (!req.url.startsWith('/api/')) {
      done();
      return;
    }
    for (const context of CONTEXTS) {
      const value = context === 'params' ? req.params : context === 'querystring' ? req.query : req.body;
      if (value === undefined || value === null) continue;
      const fields = unstorableFields(value);
      if (fields.length === 0) continue;
      const err = new RequestValidationError(fields, false);
      err.validationContext = context;
      done(err);
      return;
    }
    done();
  });
}

/**
 * Fastify's `frameworkErrors`: a request its router cannot route (a path that is not valid
 * percent-encoding, a path parameter over `maxParamLength`) gets the problem+json every
 * other error gets, with its `X-Request-Id` (and `headers`), instead of Fastify's own JSON.
 */
export function frameworkErrorProblem(headers: Record<string, string> = {}) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    reply.header('X-Request-Id', req.id);
    reply.headers(headers);
    if (err.code === 'FST_ERR_BAD_URL') {
      void sendProblem(req, reply, 'malformed-request', 'The URL path is not valid: each % must start a complete percent-encoded UTF-8 character (such as %20).');
      return;
    }
    if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
      void sendProblem(req, reply, 'malformed-request', `A path parameter is longer than ${req.server.initialConfig.maxParamLength ?? 100} characters; no id is that long.`);
      return;
    }
    req.log.error({ err }, 'request could not be routed');
    void sendProblem(req, reply, 'internal', 'An unexpected error occurred. Quote the traceId to support.');
  };
}

/** Node's HTTP parser errors a client can cause, as problems (anything else it reports is a malformed request). */
const CLIENT_ERRORS: Record<string, { slug: ErrorSlug; detail: string }> = {
  HPE_HEADER_OVERFLOW: { slug: 'headers-too-large', detail: 'The request line and headers exceed 16 KiB: shorten the query string or the headers.' },
  ERR_HTTP_REQUEST_TIMEOUT: { slug: 'request-timeout', detail: 'The request did not arrive in full in time.' },
};

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses before Fastify sees it (a
 * request line and headers over 16 KiB, a request that never finished arriving, bytes that are not
 * HTTP) gets a problem+json answer like every other error, with a trace id that is also logged,
 * instead of Fastify's own JSON. The socket is closed after it, as Node does.
 */
export function clientErrorProblem(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { slug, detail } = CLIENT_ERRORS[err.code ?? ''] ?? { slug: 'malformed-request' as const, detail: 'The request is not valid HTTP.' };
  const problem = problemBody(this.docsUrl, slug, detail, newId('trace'));
  const { status, traceId } = problem;
  this.log.info({ traceId, code: err.code, status }, 'request refused by the HTTP parser');
  const body = JSON.stringify(problem);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${traceId}\r\n\r\n${body}`);
  }
  socket.destroy(err);
}
