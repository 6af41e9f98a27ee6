import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import type { ConversationService } from './service.js';
import { pageSchema } from '../../http/pagination.js';
import {
  addTagsBody,
  agentIdParams,
  agentStatsQuery,
  agentStatsSchema,
  analysisSchema,
  conversationIdParams,
  conversationSchema,
  costsSchema,
  latencySchema,
  listConversationsQuery,
  messagesSchema,
  outcomeResultSchema,
  setOutcomeBody,
  tagsResultSchema,
  transcriptSchema,
} from './schemas.js';

const tags = ['Conversations'];
const READ = { scope: 'conversations:read' } as const;
const WRITE = { scope: 'conversations:write' } as const;

/** The Conversations section, and agent statistics (computed from conversations). */
export const conversationRoutes: FastifyPluginAsync<{ service: ConversationService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/conversations', {
    config: READ,
    schema: { tags, summary: 'List conversations (filters combine with AND)', querystring: listConversationsQuery, response: { 200: pageSchema(conversationSchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.post('/conversations/:conversationId/tags', {
    config: { ...WRITE, idempotent: true },
    schema: { tags, summary: 'Add tags (repeats are ignored); answers all the tags', params: conversationIdParams, body: addTagsBody, response: { 200: tagsResultSchema, ...problemResponses(400, 401, 403, 404, 422, 429) } },
    handler: async (req) => service.addTags(principalOf(req), req.params.conversationId, req.body.tags),
  });

  r.put('/conversations/:conversationId/outcome', {
    config: WRITE,
    schema: { tags, summary: 'Set the outcome and its notes', params: conversationIdParams, body: setOutcomeBody, response: { 200: outcomeResultSchema, ...problemResponses(400, 401, 403, 404, 422, 429) } },
    handler: async (req) => service.setOutcome(principalOf(req), req.params.conversationId, req.body.outcome, req.body.notes),
  });

  r.get('/conversations/:conversationId', {
    config: READ,
    schema: { tags, summary: 'Get a conversation', params: conversationIdParams, response: { 200: conversationSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.conversationId),
  });

  r.delete('/conversations/:conversationId', {
    config: { ...WRITE, permission: 'canDeleteConversations' },
    schema: {
      tags,
      summary: 'Delete a conversation permanently (messages, transcript, analysis, recording); 409 while in progress',
      params: conversationIdParams,
      response: { 204: z.null().describe('Deleted'), ...problemResponses(401, 403, 404, 409, 429, 503) },
    },
    handler: async (req, reply) => {
      await service.delete(principalOf(req), req.params.conversationId);
      return reply.code(204).send(null);
    },
  });

  r.get('/agents/:agentId/stats', {
    config: { scope: 'agents:read' },
    schema: {
      tags: ['Agents'],
      summary: "Statistics of an agent's conversations in a period (the same rows the conversations list returns for that agent and dates)",
      params: agentIdParams,
      querystring: agentStatsQuery,
      response: { 200: agentStatsSchema, ...problemResponses(401, 403, 404, 422, 429) },
    },
    handler: async (req) => service.agentStats(principalOf(req), req.params.agentId, req.query),
  });

  r.get('/conversations/:conversationId/messages', {
    config: READ,
    schema: { tags, summary: 'List the messages of a conversation, in order (no word timing)', params: conversationIdParams, response: { 200: messagesSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.messages(principalOf(req), req.params.conversationId),
  });

  r.get('/conversations/:conversationId/transcript', {
    config: READ,
    schema: { tags, summary: 'Get the transcript with word timing', params: conversationIdParams, response: { 200: transcriptSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.transcript(principalOf(req), req.params.conversationId),
  });

  r.get('/conversations/:conversationId/costs', {
    config: READ,
    schema: {
      tags,
      summary: 'Get the costs of an ended conversation (409 while in progress)',
      params: conversationIdParams,
      response: { 200: costsSchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req) => service.costs(principalOf(req), req.params.conversationId),
  });

  r.get('/conversations/:conversationId/latency', {
    config: READ,
    schema: {
      tags,
      summary: 'Get the latency breakdown of each agent reply of an ended conversation (409 while in progress)',
      params: conversationIdParams,
      response: { 200: latencySchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req) => service.latency(principalOf(req), req.params.conversationId),
  });

  r.get('/conversations/:conversationId/analysis', {
    config: READ,
    schema: {
      tags,
      summary: 'Get the post-call AI analysis (409 while it is pending or running; 404 analysis-not-found when there is none)',
      params: conversationIdParams,
      response: { 200: analysisSchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req) => service.analysis(principalOf(req), req.params.conversationId),
  });
};
