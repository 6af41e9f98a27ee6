import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pageSchema } from '../../http/pagination.js';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import {
  createWebhookBody,
  createdWebhookSchema,
  deliveryDetailSchema,
  deliveryParams,
  deliverySchema,
  listDeliveriesQuery,
  listWebhooksQuery,
  patchWebhookBody,
  webhookIdParams,
  webhookSchema,
} from './schemas.js';
import type { WebhookService } from './service.js';

const tags = ['Webhooks'];
const READ = { scope: 'webhooks:read' } as const;
const WRITE = { scope: 'webhooks:write' } as const;
const ACTION = { scope: 'webhooks:write', idempotent: true } as const;

/** The spec's Webhooks section plus the delivery log and replay (docs/api.md "Webhooks"). */
export const webhookRoutes: FastifyPluginAsync<{ service: WebhookService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/webhooks', {
    config: ACTION,
    schema: { tags, summary: 'Create a webhook (the secret is in this response only)', body: createWebhookBody, response: { 201: createdWebhookSchema, ...problemResponses(400, 401, 403, 422, 429) } },
    handler: async (req, reply) => reply.code(201).send(await service.create(principalOf(req), req.body)),
  });

  r.get('/webhooks', {
    config: READ,
    schema: { tags, summary: 'List webhooks', querystring: listWebhooksQuery, response: { 200: pageSchema(webhookSchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.get('/webhooks/:webhookId', {
    config: READ,
    schema: { tags, summary: 'Get a webhook', params: webhookIdParams, response: { 200: webhookSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.webhookId),
  });

  r.patch('/webhooks/:webhookId', {
    config: WRITE,
    schema: { tags, summary: 'Update url, events, secret or enabled', params: webhookIdParams, body: patchWebhookBody, response: { 200: webhookSchema, ...problemResponses(400, 401, 403, 404, 422, 429) } },
    handler: async (req) => service.update(principalOf(req), req.params.webhookId, req.body),
  });

  r.delete('/webhooks/:webhookId', {
    config: WRITE,
    schema: { tags, summary: 'Delete a webhook and its delivery log (pending deliveries are dropped)', params: webhookIdParams, response: { 204: z.null().describe('Deleted'), ...problemResponses(401, 403, 404, 429) } },
    handler: async (req, reply) => {
      await service.delete(principalOf(req), req.params.webhookId);
      return reply.code(204).send(null);
    },
  });

  r.get('/webhooks/:webhookId/deliveries', {
    config: READ,
    schema: {
      tags,
      summary: 'Delivery log: each event sent to this webhook with every attempt',
      params: webhookIdParams,
      querystring: listDeliveriesQuery,
      response: { 200: pageSchema(deliverySchema), ...problemResponses(401, 403, 404, 422, 429) },
    },
    handler: async (req) => service.deliveries(principalOf(req), req.params.webhookId, req.query),
  });

  r.get('/webhooks/:webhookId/deliveries/:deliveryId', {
    config: READ,
    schema: { tags, summary: 'One delivery with its attempts and the event as sent', params: deliveryParams, response: { 200: deliveryDetailSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.delivery(principalOf(req), req.params.webhookId, req.params.deliveryId),
  });

  r.post('/webhooks/:webhookId/deliveries/:deliveryId/replay', {
    config: ACTION,
    schema: {
      tags,
      summary: 'Re-send a delivered or failed event: same delivery id and body, fresh timestamp and signature, a new run of up to 6 attempts',
      params: deliveryParams,
      response: { 202: deliveryDetailSchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req, reply) => reply.code(202).send(await service.replay(principalOf(req), req.params.webhookId, req.params.deliveryId)),
  });
};
