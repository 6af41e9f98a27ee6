import type { FastifySchema } from 'fastify';
import type { jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { RouteAccess } from './fastify-types.js';

type Transform = typeof jsonSchemaTransform;

/**
 * Adds what the auth hook enforces to each operation of the OpenAPI document: the
 * bearer requirement, `x-required-scope`, `x-required-permission`, `x-required-right`
 * (user-only rights) and `x-idempotent`,
 * so the document and the behaviour come from the same route declaration.
 */
export function openApiTransform(base: Transform): Transform {
  return (input) => {
    const out = base(input);
    const access = (input.route.config ?? {}) as RouteAccess;
    if (access.scope === undefined) return out;
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
