import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pageSchema } from '../../http/pagination.js';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import type { ApiKeyService } from './service.js';
import { apiKeyIdParams, apiKeySchema, createApiKeyBody, createdApiKeySchema, listApiKeysQuery } from './schemas.js';

const tags = ['API keys'];
// No scope of the ten covers keys; managing them takes the canManageApiKeys permission.
const MANAGE = { scope: false as const, permission: 'canManageApiKeys' } as const;

export const apiKeyRoutes: FastifyPluginAsync<{ service: ApiKeyService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/api-keys', {
    config: { ...MANAGE, idempotent: true },
    schema: { tags, summary: 'Create an API key (the secret is in this response only)', body: createApiKeyBody, response: { 201: createdApiKeySchema, ...problemResponses(400, 401, 403, 422, 429) } },
    handler: async (req, reply) => reply.code(201).send(await service.create(principalOf(req), req.body)),
  });

  r.get('/api-keys', {
    config: MANAGE,
    schema: { tags, summary: 'List API keys (revoked keys are not listed)', querystring: listApiKeysQuery, response: { 200: pageSchema(apiKeySchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.get('/api-keys/:id', {
    config: MANAGE,
    schema: { tags, summary: 'Get an API key record', params: apiKeyIdParams, response: { 200: apiKeySchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.id),
  });

  r.delete('/api-keys/:id', {
    config: MANAGE,
    schema: { tags, summary: 'Revoke an API key (effective immediately)', params: apiKeyIdParams, response: { 204: z.null().describe('Revoked'), ...problemResponses(401, 403, 404, 429) } },
    handler: async (req, reply) => {
      await service.revoke(principalOf(req), req.params.id);
      return reply.code(204).send(null);
    },
  });
};
