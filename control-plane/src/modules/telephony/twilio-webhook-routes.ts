import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, validateTwilioSignature } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { sendProblem } from '../../http/problem.js';
import { apologyAnswer } from './inbound-answer.js';
import { InboundCallRouter } from './inbound-call-router.js';
import { PhoneNumberRepository } from './phone-number-repository.js';

/** What the Twilio webhook plugin needs; it builds its own repository and router from them. */
export interface TwilioWebhookOptions {
  db: Db;
  /** The Auth Token signatures are checked with; undefined refuses every request (fail closed). */
  authToken: string | undefined;
  /** The platform's public base URL: signatures cover the URL Twilio called, not ours behind a proxy. */
  publicUrl: string;
  /** The media gateway's public base (`wss://…`) for stream URLs. */
  mediaGatewayPublicUrl: string;
}

/** A parsed form body, kept apart from JSON bodies (a JSON object can never pass for one). */
class TwilioForm {
  constructor(
    readonly raw: string,
    readonly params: Record<string, string | string[]>,
  ) {}

  /** First value of a parameter (Twilio sends each voice parameter once). */
  get(name: string): string | undefined {
    const v = this.params[name];
    return Array.isArray(v) ? v[0] : v;
  }
}

function parseForm(raw: string): TwilioForm {
  const params: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const prev = params[name];
    params[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return new TwilioForm(raw, params);
}

const PUBLIC = { scope: null } as const;
// Provider callbacks are not API operations: no bearer, no OpenAPI entry.
const ROUTE = { config: PUBLIC, schema: { hide: true } } as const;
const PREFIXES = ['', '/api/v1'] as const;

/**
 * Twilio's callbacks: `POST /webhooks/twilio/voice` (inbound call → TwiML) and
 * `POST /webhooks/twilio/status` (call status), each also under `/api/v1`. Bodies are
 * form-encoded; the parser for them lives only in this plugin, the rest of the API stays
 * JSON-only. Every request must carry a valid `X-Twilio-Signature` (403 otherwise).
 *
 * The voice webhook never answers 5xx: an unroutable call or any failure (database down,
 * rate limit of the `/api/v1` alias) is answered 200 with a spoken apology and a hang-up,
 * so the caller hears something better than the carrier's error message.
 */
export const twilioWebhookRoutes: FastifyPluginAsync<TwilioWebhookOptions> = async (app, opts) => {
  const router = new InboundCallRouter({ numbers: new PhoneNumberRepository(opts.db), mediaGatewayPublicUrl: opts.mediaGatewayPublicUrl });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, parseForm(String(body))));

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    const status = err instanceof AppError ? err.status : ((err as FastifyError).statusCode ?? 500);
    if (!req.routeOptions.url?.endsWith('/twilio/voice') || (status < 500 && status !== 429)) throw err; // the app's problem+json handler
    req.log.error({ err, reason: 'error' }, 'inbound call answered with apology');
    return reply.code(200).type('text/xml').send(apologyAnswer('twilio').body);
  });

  /** The verified form, or null after sending 403. */
  function verified(req: FastifyRequest, reply: FastifyReply): TwilioForm | null {
    const header = req.headers['x-twilio-signature'];
    const signature = typeof header === 'string' ? header : undefined;
    const form = req.body instanceof TwilioForm ? req.body : undefined;
    // The URL Twilio signed is the public one (config), with the path and query as received.
    if (form && opts.authToken && validateTwilioSignature({ authToken: opts.authToken, url: `${opts.publicUrl}${req.url}`, params: form.params, signature })) return form;
    const reason = !opts.authToken ? 'no-auth-token' : !signature ? 'missing-signature' : !form ? 'not-form-encoded' : 'bad-signature';
    req.log.warn({ reason, path: req.routeOptions.url }, 'Twilio webhook rejected');
    sendProblem(req, reply, 'forbidden', 'The X-Twilio-Signature header is missing or does not match this request.');
    return null;
  }

  for (const prefix of PREFIXES) {
    app.post(`${prefix}/webhooks/twilio/voice`, ROUTE, async (req, reply) => {
      const form = verified(req, reply);
      if (!form) return reply;
      const callSid = form.get('CallSid');
      const decision = await router.answer('twilio', { callSid, from: form.get('From'), to: form.get('To') });
      const log = req.log.child({ callSid, provider: 'twilio' });
      if (decision.outcome === 'connected') {
        log.info({ numberId: decision.numberId, agentId: decision.agentId, tenantId: decision.tenantId }, 'inbound call routed to agent');
      } else if (decision.outcome === 'error') {
        log.error({ err: decision.error, reason: decision.outcome }, 'inbound call answered with apology');
      } else {
        log.warn({ reason: decision.outcome, numberId: decision.numberId, agentId: decision.agentId }, 'inbound call answered with apology');
      }
      return reply.code(200).type(decision.answer.contentType).send(decision.answer.body);
    });

    app.post(`${prefix}/webhooks/twilio/status`, ROUTE, async (req, reply) => {
      const form = verified(req, reply);
      if (!form) return reply;
      // TODO(#9): feed call status into outbound calls and number statistics; logged for now.
      req.log.info(
        { callSid: form.get('CallSid'), provider: 'twilio', callStatus: form.get('CallStatus'), sequenceNumber: form.get('SequenceNumber'), callDurationSec: form.get('CallDuration') },
        'Twilio call status',
      );
      return reply.code(204).send();
    });
  }
};
