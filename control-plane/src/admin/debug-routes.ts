import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError } from '@vap/shared';
import { problemResponses } from '../http/problem.js';
import type { Db } from '../db/database.js';
import type { TelephonyProviders } from '../modules/telephony/providers/index.js';
import type { StreamTokens } from '../modules/telephony/stream-token.js';
import type { CallInspector } from './call-inspector.js';
import { probeConnection } from './connection-probe.js';
import { repairTelnyxProviderSids } from './provider-sid-repair.js';
import { simulateInbound } from './inbound-simulator.js';
import {
  callNotFoundSchema,
  callSidParams,
  inspectedCallSchema,
  repairProviderSidsQuery,
  repairSummarySchema,
  simulateInboundBody,
  simulateInboundResponse,
  validateConnectionBody,
  validateConnectionResponse,
} from './schemas.js';

/**
 * The spec's "Telephony debug (admin only)" endpoints: the call inspector, the inbound-call
 * simulator, the carrier credentials probe and the Telnyx provider-id repair.
 * Authentication is the admin server's hook.
 */
export const debugRoutes: FastifyPluginAsync<{ appEnv: 'development' | 'production'; inspector: CallInspector; telephony: TelephonyProviders; db: Db; streamTokens: StreamTokens }> = async (app, opts) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/telephony/debug/simulate-inbound', {
    // Before body validation, so production answers 403 whatever the body.
    onRequest: async () => {
      if (opts.appEnv !== 'development') throw new AppError('forbidden', 'The inbound-call simulator runs only when APP_ENV=development.');
    },
    schema: { body: simulateInboundBody, response: { 200: simulateInboundResponse, ...problemResponses(400, 401, 403, 422) } },
    handler: async (req) => simulateInbound(req.body, opts.streamTokens),
  });

  r.post('/telephony/debug/validate-connection', {
    schema: { body: validateConnectionBody, response: { 200: validateConnectionResponse, ...problemResponses(400, 401, 403, 422) } },
    handler: async (req) => probeConnection(opts.telephony, req.body.provider, req.body.countryCode),
  });

  r.post('/telephony/debug/repair-provider-sids', {
    schema: { querystring: repairProviderSidsQuery, response: { 200: repairSummarySchema, ...problemResponses(400, 401, 403, 422, 503) } },
    handler: async (req) => {
      const status = opts.telephony.status.telnyx;
      if (!status.configured) throw new AppError('unavailable', `Telnyx is not configured: set ${status.missing.join(' and ')}.`);
      return repairTelnyxProviderSids(opts.db, opts.telephony.providers.telnyx, req.query.dryRun);
    },
  });

  r.get('/telephony/debug/calls/:callSid', {
    schema: { params: callSidParams, response: { 200: inspectedCallSchema, 404: callNotFoundSchema, ...problemResponses(401, 403) } },
    handler: async (req, reply) => {
      const { callSid } = req.params;
      const found = await opts.inspector.find(callSid);
      // The spec's shape for no match: not a problem document.
      if (!found) return reply.code(404).send({ callSid, message: `No conversation, outbound call or carrier call event has the provider call id ${callSid}.` });
      return found;
    },
  });
};
