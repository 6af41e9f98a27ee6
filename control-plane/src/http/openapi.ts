import type { FastifySchema } from 'fastify';
import type { jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { RouteAccess } from './fastify-types.js';
import { problemSchema } from './problem.js';

type Transform = typeof jsonSchemaTransform;

/**
 * Adds what the auth hook enforces to each operation of the OpenAPI document: the
 * bearer requirement, `x-required-scope`, `x-required-permission`, `x-required-right`
 * (user-only rights) and `x-idempotent`, and the problems every /api operation can answer
 * before its handler runs (input-guards.ts): 422 for text Postgres cannot store in a
 * parameter or the body, 400 for a path parameter the router cannot read,
 * so the document and the behaviour come from the same route declaration.
 */
export function openApiTransform(base: Transform): Transform {
  return (input) => {
    const access = (input.route.config ?? {}) as RouteAccess;
    if (access.scope === undefined) return base(input);
    const out = base(withGuardResponses(input));
    const schema = out.schema as FastifySchema & Record<string, unknown>;
    const extra: Record<string, unknown> = {};
    if (access.scope !== null) {
      extra.security = [{ bearerAuth: [] }];
      extra['x-required-scope'] = access.scope === false ? null : access.scope;
      if (access.permission) extra['x-required-permission'] = access.permission;
      if (access.right) extra['x-required-right'] = access.right;
      const need = access.scope
        ? `scope \`${access.scope}\``
        : access.right
          ? `a signed-in user holding the right \`${access.right}\` (API keys cannot use it)`
          : `permission \`${access.permission}\``;
      extra.description = `${(schema.description as string | undefined) ?? ''}${schema.description ? '\n\n' : ''}Requires ${need}.`;
    } else {
      extra.security = [];
    }
    if (access.idempotent) {
      extra['x-idempotent'] = true;
      extra.headers = {
        type: 'object',
        properties: {
          'idempotency-key': { type: 'string', maxLength: 255, description: 'Repeat within 24 h with the same body returns the original response without re-executing.' },
        },
      };
    }
    return { ...out, schema: { ...schema, ...extra } as typeof out.schema };
  };
}

/** `input` with 422 (and, with path parameters, 400) problem responses where its route does not list them. */
function withGuardResponses(input: Parameters<Transform>[0]): Parameters<Transform>[0] {
  const schema = input.schema as FastifySchema;
  const response = schema.response as Record<string, unknown> | undefined;
  if (!response || !(schema.params || schema.querystring || schema.body)) return input;
  const added: Record<string, unknown> = {};
  if (!('422' in response)) added[422] = problemSchema;
  if (schema.params && !('400' in response)) added[400] = problemSchema;
  if (Object.keys(added).length === 0) return input;
  return { ...input, schema: { ...schema, response: { ...response, ...added } } as typeof input.schema };
}
