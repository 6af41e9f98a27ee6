import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import type { ConversationService } from './service.js';
import { conversationIdParams, conversationSchema, costsSchema, messagesSchema, transcriptSchema } from './schemas.js';

const tags = ['Conversations'];
const READ = { scope: 'conversations:read' } as const;

/** The read side of the Conversations section (list, recording, analysis, tags, outcome and delete come with #7). */
export const conversationRoutes: FastifyPluginAsync<{ service: ConversationService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/conversations/:conversationId', {
    config: READ,
    schema: { tags, summary: 'Get a conversation', params: conversationIdParams, response: { 200: conversationSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.conversationId),
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
};
