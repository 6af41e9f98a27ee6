import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pageSchema } from '../../http/pagination.js';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import {
  assignParams,
  listNumbersQuery,
  numberIdParams,
  numberStatsQuery,
  numberStatsSchema,
  phoneNumberListItemSchema,
  phoneNumberSchema,
  pricingQuery,
  pricingSchema,
  provisionNumberBody,
  searchNumbersQuery,
  searchResultSchema,
} from './phone-number-schemas.js';
import type { PhoneNumberService } from './phone-number-service.js';

const tags = ['Telephony'];
const READ = { scope: 'telephony:read' } as const;
const WRITE = { scope: 'telephony:write' } as const;
const ACTION = { scope: 'telephony:write', idempotent: true } as const;

/** The spec's Telephony › numbers rows (docs/telephony-numbers.md). SIP trunks are not here. */
export const phoneNumberRoutes: FastifyPluginAsync<{ service: PhoneNumberService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/telephony/numbers/search', {
    config: READ,
    schema: {
      tags,
      summary: 'Search numbers a carrier offers (without provider: every configured carrier, merged)',
      querystring: searchNumbersQuery,
      response: { 200: searchResultSchema, ...problemResponses(400, 401, 403, 422, 429, 502, 503) },
    },
    handler: async (req) => service.search(req.query),
  });

  r.get('/telephony/numbers/pricing', {
    config: READ,
    schema: { tags, summary: "A carrier's number and per-minute prices for a country", querystring: pricingQuery, response: { 200: pricingSchema, ...problemResponses(400, 401, 403, 422, 429, 502, 503) } },
    handler: async (req) => service.pricing(req.query),
  });

  r.post('/telephony/numbers', {
    config: ACTION,
    schema: {
      tags,
      summary: 'Buy a number at the carrier, pointed at the platform, and keep it (active, unassigned)',
      body: provisionNumberBody,
      response: { 201: phoneNumberSchema, ...problemResponses(400, 401, 403, 409, 422, 429, 502, 503) },
    },
    handler: async (req, reply) => reply.code(201).send(await service.provision(principalOf(req), req.body)),
  });

  r.get('/telephony/numbers', {
    config: READ,
    schema: { tags, summary: 'List numbers (with the assigned agent\'s name)', querystring: listNumbersQuery, response: { 200: pageSchema(phoneNumberListItemSchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.post('/telephony/numbers/:numberId/assign/:agentId', {
    config: ACTION,
    schema: {
      tags,
      summary: 'Route the number\'s calls to an agent (again to the same agent: no change)',
      params: assignParams,
      response: { 200: phoneNumberSchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req) => service.assign(principalOf(req), req.params.numberId, req.params.agentId),
  });

  r.post('/telephony/numbers/:numberId/unassign', {
    config: ACTION,
    schema: { tags, summary: 'Remove the number\'s agent (its calls get the apology)', params: numberIdParams, response: { 200: phoneNumberSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.unassign(principalOf(req), req.params.numberId),
  });

  r.delete('/telephony/numbers/:numberId', {
    config: WRITE,
    schema: {
      tags,
      summary: 'Release the number at the carrier; it stops routing at once and is kept as released',
      params: numberIdParams,
      response: { 204: z.null().describe('Released'), ...problemResponses(401, 403, 404, 429, 502, 503) },
    },
    handler: async (req, reply) => {
      await service.release(principalOf(req), req.params.numberId);
      return reply.code(204).send(null);
    },
  });

  r.get('/telephony/numbers/:numberId/stats', {
    config: READ,
    schema: { tags, summary: 'Calls through the number in a period (default the last 30 days)', params: numberIdParams, querystring: numberStatsQuery, response: { 200: numberStatsSchema, ...problemResponses(401, 403, 404, 422, 429) } },
    handler: async (req) => service.stats(principalOf(req), req.params.numberId, req.query),
  });
};
