import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, ERROR_CATALOGUE } from '@vap/shared';
import type { ErrorSlug, FieldError } from '@vap/shared';
import { isDatabaseUnavailable } from '../db/errors.js';
import { RequestValidationError } from './validation.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const problemSchema = z
  .object({
    type: z.string().describe('`<docs_url>/errors/<slug>`'),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    traceId: z.string().describe('Equal to the X-Request-Id header'),
    errors: z.array(z.object({ field: z.string(), message: z.string() })).optional().describe('On 400 and 422: each bad field'),
  })
  .meta({ id: 'Problem' });

export type Problem = z.infer<typeof problemSchema>;

/** Response schemas for the given error statuses, for a route's `response` (and so for OpenAPI). */
export function problemResponses<const S extends number>(...statuses: S[]): Record<S, typeof problemSchema> {
  return Object.fromEntries(statuses.map((s) => [s, problemSchema])) as Record<S, typeof problemSchema>;
}

/** The problem document of `slug` (its type under `docsUrl`, title and status from the catalogue). */
export function problemBody(docsUrl: string, slug: ErrorSlug, detail: string, traceId: string, errors?: FieldError[]): Problem {
  const entry = ERROR_CATALOGUE[slug];
  return { type: `${docsUrl}/errors/${slug}`, title: entry.title, status: entry.status, detail, traceId, ...(errors && errors.length > 0 ? { errors } : {}) };
}

export function sendProblem(req: FastifyRequest, reply: FastifyReply, slug: ErrorSlug, detail: string, errors?: FieldError[]): FastifyReply {
  const body = problemBody(req.server.docsUrl, slug, detail, String(req.id), errors);
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

const FASTIFY_CLIENT_ERRORS: Record<string, { slug: ErrorSlug; detail: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { slug: 'malformed-request', detail: 'The request body is not valid JSON.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { slug: 'malformed-request', detail: 'The body is empty but Content-Type says application/json; send a JSON body or omit the header.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { slug: 'unsupported-media-type', detail: 'This Content-Type is not accepted; send application/json.' },
  FST_ERR_CTP_BODY_TOO_LARGE: { slug: 'payload-too-large', detail: 'The request body is larger than this endpoint accepts.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { slug: 'malformed-request', detail: 'Content-Length does not match the body.' },
};

/** The Retry-After of a request that failed because Postgres could not be reached. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;
export const DATABASE_UNAVAILABLE_DETAIL = "The platform's database is unreachable right now, so the request could not be completed. Retry with backoff; an Idempotency-Key makes retrying a create safe.";

/**
 * Renders every error as RFC 7807 problem JSON; 5xx details never leak internals. A database
 * outage is 503 `unavailable` with Retry-After (clients retry), not 500 `internal`.
 */
export function registerProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      if (err.status >= 500) req.log.error({ err }, 'request failed');
      return sendProblem(req, reply, err.slug, err.message, err.errors);
    }
    if (err instanceof RequestValidationError) {
      const where = err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'request');
      if (err.missing) return sendProblem(req, reply, 'malformed-request', `Required ${where} fields are missing: ${err.errors.map((e) => e.field || '(body)').join(', ')}.`, err.errors);
      return sendProblem(req, reply, 'validation', `The ${where} breaks ${err.errors.length === 1 ? 'a rule' : `${err.errors.length} rules`}; see errors.`, err.errors);
    }
    const code = (err as FastifyError).code;
    const known = code ? FASTIFY_CLIENT_ERRORS[code] : undefined;
    if (known) return sendProblem(req, reply, known.slug, known.detail);
    const status = (err as FastifyError).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      req.log.info({ err }, 'client error');
      return sendProblem(req, reply, status === 404 ? 'not-found' : 'malformed-request', 'The request could not be processed as sent.');
    }
    if (isDatabaseUnavailable(err)) {
      // Postgres is stopped, restarting or full: a retry soon is likely to work (creates are safe to retry with an Idempotency-Key).
      req.log.error({ err }, 'database unavailable');
      reply.header('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
      return sendProblem(req, reply, 'unavailable', DATABASE_UNAVAILABLE_DETAIL);
    }
    req.log.error({ err }, 'unexpected error');
    return sendProblem(req, reply, 'internal', 'An unexpected error occurred. Quote the traceId to support.');
  });

  app.setNotFoundHandler((req, reply) => sendProblem(req, reply, 'route-not-found', `No operation ${req.method} ${req.url.split('?')[0]}.`));
}
