import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, validationError } from '@vap/shared';
import type { IdempotencyStore } from './idempotency-store.js';

const HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function requestHash(req: FastifyRequest): string {
  const path = req.url.split('?')[0];
  return createHash('sha256').update(`${req.method} ${path}\n${canonicalJson(req.body ?? null)}`).digest('hex');
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: { tenantId: string; key: string } | null;
  }
}

/**
 * `Idempotency-Key` for routes with `config.idempotent`. Runs after validation and auth:
 * the first request claims the key and its response (2xx or 4xx) is stored; a repeat
 * with the same method, path and body gets that response again with
 * `Idempotent-Replayed: true`; a different request with the key gets 422; a repeat while
 * the first still runs gets 409. A 5xx releases the key so the client can retry.
 */
export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore): void {
  app.decorateRequest('idempotencyClaim', null);

  app.addHook('preHandler', async (req, reply) => {
    if (!req.routeOptions.config.idempotent) return;
    const raw = req.headers[HEADER];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw[0]! : raw;
    if (!KEY_PATTERN.test(key)) throw validationError('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
    const tenantId = req.principal?.tenantId;
    if (!tenantId) return;
    const claim = await store.claim(tenantId, key, requestHash(req));
    switch (claim.kind) {
      case 'claimed':
        req.idempotencyClaim = { tenantId, key };
        return;
      case 'in_progress':
        throw new AppError('idempotency-key-in-use', 'A request with this Idempotency-Key is still being processed; retry shortly.');
      case 'mismatch':
        throw new AppError('idempotency-key-reused', 'This Idempotency-Key was used for a different request in the last 24 hours.');
      case 'replay':
        reply.header('Idempotent-Replayed', 'true');
        return reply.code(claim.status).type(claim.contentType).send(claim.body);
    }
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const claim = req.idempotencyClaim;
    if (!claim) return payload;
    req.idempotencyClaim = null;
    if (reply.statusCode >= 500) {
      await store.release(claim.tenantId, claim.key);
    } else {
      const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
      await store.complete(claim.tenantId, claim.key, reply.statusCode, body, String(reply.getHeader('content-type') ?? 'application/json'));
    }
    return payload;
  });

  // A request that dies before sending anything (client gone, crash in a hook) must not hold the key.
  app.addHook('onResponse', async (req) => {
    if (req.idempotencyClaim) await store.release(req.idempotencyClaim.tenantId, req.idempotencyClaim.key);
  });
}
