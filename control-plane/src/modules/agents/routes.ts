import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../http/problem.js';
import { trustedSerializerCompiler } from '../../http/fast-serializer.js';
import { pageSchema } from '../../http/pagination.js';
import { principalOf } from '../auth/access-control.js';
import type { AgentService } from './service.js';
import {
  agentConfigSchema,
  agentIdParams,
  agentPatchSchema,
  agentSchema,
  duplicateBody,
  listAgentsQuery,
  publishBody,
  versionDetailSchema,
  versionParams,
  versionRecordSchema,
} from './schemas.js';

const tags = ['Agents'];
const READ = { scope: 'agents:read' } as const;
const WRITE = { scope: 'agents:write' } as const;
const ACTION = { scope: 'agents:write', idempotent: true } as const;

/** The Agents section of the spec (stats, test and export/import come with later issues). */
export const agentRoutes: FastifyPluginAsync<{ service: AgentService }> = async (app, { service }) => {
  // Bodies are built from stored configurations that passed the agent schema on write:
  // shaped (defaults, key order) and stringified without re-validating (this plugin only).
  app.setSerializerCompiler(trustedSerializerCompiler);
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/agents', {
    config: ACTION,
    schema: { tags, summary: 'Create an agent (status draft, version 1)', body: agentConfigSchema, response: { 201: agentSchema, ...problemResponses(400, 401, 403, 409, 422, 429) } },
    handler: async (req, reply) => reply.code(201).send(await service.create(principalOf(req), req.body)),
  });

  r.get('/agents', {
    config: READ,
    schema: { tags, summary: 'List agents', querystring: listAgentsQuery, response: { 200: pageSchema(agentSchema), ...problemResponses(400, 401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.get('/agents/:agentId', {
    config: READ,
    schema: { tags, summary: 'Get an agent', params: agentIdParams, response: { 200: agentSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.agentId),
  });

  r.patch('/agents/:agentId', {
    config: WRITE,
    schema: {
      tags,
      summary: 'Update an agent (partial, deep merge; version + 1)',
      params: agentIdParams,
      body: agentPatchSchema,
      response: { 200: agentSchema, ...problemResponses(400, 401, 403, 404, 409, 422, 429) },
    },
    handler: async (req) => service.update(principalOf(req), req.params.agentId, req.body as Record<string, unknown>),
  });

  r.delete('/agents/:agentId', {
    config: WRITE,
    schema: { tags, summary: 'Delete an agent (conversations are kept)', params: agentIdParams, response: { 204: z.null().describe('Deleted'), ...problemResponses(401, 403, 404, 429) } },
    handler: async (req, reply) => {
      await service.remove(principalOf(req), req.params.agentId);
      return reply.code(204).send(null);
    },
  });

  r.post('/agents/:agentId/activate', {
    config: ACTION,
    schema: { tags, summary: 'Activate (draft or inactive → active)', params: agentIdParams, response: { 200: agentSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.activate(principalOf(req), req.params.agentId),
  });

  r.post('/agents/:agentId/deactivate', {
    config: ACTION,
    schema: { tags, summary: 'Deactivate (active → inactive)', params: agentIdParams, response: { 200: agentSchema, ...problemResponses(401, 403, 404, 409, 429) } },
    handler: async (req) => service.deactivate(principalOf(req), req.params.agentId),
  });

  r.post('/agents/:agentId/publish', {
    config: ACTION,
    schema: { tags, summary: 'Publish the current version', params: agentIdParams, body: publishBody, response: { 200: agentSchema, ...problemResponses(400, 401, 403, 404, 422, 429) } },
    handler: async (req) => service.publish(principalOf(req), req.params.agentId, req.body?.notes),
  });

  r.post('/agents/:agentId/duplicate', {
    config: ACTION,
    schema: { tags, summary: 'Duplicate into a new inactive agent', params: agentIdParams, body: duplicateBody, response: { 201: agentSchema, ...problemResponses(400, 401, 403, 404, 409, 422, 429) } },
    handler: async (req, reply) => reply.code(201).send(await service.duplicate(principalOf(req), req.params.agentId, req.body.name)),
  });

  r.get('/agents/:agentId/versions', {
    config: READ,
    schema: { tags, summary: 'List version records, newest first', params: agentIdParams, response: { 200: z.object({ data: z.array(versionRecordSchema) }), ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.versions(principalOf(req), req.params.agentId),
  });

  r.get('/agents/:agentId/versions/:versionNumber', {
    config: READ,
    schema: { tags, summary: 'Get one version with its configuration snapshot', params: versionParams, response: { 200: versionDetailSchema, ...problemResponses(401, 403, 404, 422, 429) } },
    handler: async (req) => service.version(principalOf(req), req.params.agentId, req.params.versionNumber),
  });
};
