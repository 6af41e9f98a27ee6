import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { apologyAnswer } from './inbound-answer.js';
import { CarrierCallEventStore } from './carrier-call-event-store.js';
import { GatewayIntake } from './gateway-intake.js';
import { InboundCallRouter, logInboundDecision } from './inbound-call-router.js';
import { PhoneNumberRepository } from './phone-number-repository.js';
import { registerTwilioFormParser, verifyTwilioRequest } from './twilio-request.js';
import type { TwilioForm } from './twilio-request.js';

/** What the Twilio webhook plugin needs; it builds its own repository and router from them. */
export interface TwilioWebhookOptions {
  db: Db;
  /** The Auth Token signatures are checked with; undefined refuses every request (fail closed). */
  authToken: string | undefined;
  /** The platform's public base URL: signatures cover the URL Twilio called, not ours behind a proxy. */
  publicUrl: string;
  /** The media gateway's public base (`wss://…`) for stream URLs. */
  mediaGatewayPublicUrl: string;
  /** Clock the gateways' heartbeats are judged by, epoch ms (the one they are stored with). Default `Date.now`. */
  now?: () => number;
}

const PUBLIC = { scope: null } as const;
// Provider callbacks are not API operations: no bearer, no OpenAPI entry.
const ROUTE = { config: PUBLIC, schema: { hide: true } } as const;
const PREFIXES = ['', '/api/v1'] as const;

/** Twilio's only failure detail on a status callback is the final SIP code (reference §4.2). */
function sipDetail(code: string | undefined): string | undefined {
  return code ? `sip ${code}` : undefined;
}

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
  const router = new InboundCallRouter({ numbers: new PhoneNumberRepository(opts.db), mediaGatewayPublicUrl: opts.mediaGatewayPublicUrl, gateways: new GatewayIntake(opts.db, opts.now) });
  const events = new CarrierCallEventStore(opts.db);

  registerTwilioFormParser(app);

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    const status = err instanceof AppError ? err.status : ((err as FastifyError).statusCode ?? 500);
    if (!req.routeOptions.url?.endsWith('/twilio/voice') || (status < 500 && status !== 429)) throw err; // the app's problem+json handler
    req.log.error({ err, reason: 'error' }, 'inbound call answered with apology');
    return reply.code(200).type('text/xml').send(apologyAnswer('twilio').body);
  });

  /** The verified form, or null after sending 403 (shared with the messaging callbacks). */
  const verified = (req: FastifyRequest, reply: FastifyReply): TwilioForm | null => verifyTwilioRequest(req, reply, opts);

  for (const prefix of PREFIXES) {
    app.post(`${prefix}/webhooks/twilio/voice`, ROUTE, async (req, reply) => {
      const form = verified(req, reply);
      if (!form) return reply;
      const callSid = form.get('CallSid');
      const decision = await router.answer('twilio', { callSid, from: form.get('From'), to: form.get('To') });
      logInboundDecision(req.log.child({ callSid, provider: 'twilio' }), decision);
      return reply.code(200).type(decision.answer.contentType).send(decision.answer.body);
    });

    app.post(`${prefix}/webhooks/twilio/status`, ROUTE, async (req, reply) => {
      const form = verified(req, reply);
      if (!form) return reply;
      // Logged and stored for the admin inspector (carrier_call_events); the conversation is not
      // changed: number statistics come from the stored conversations, and outbound calls (whose
      // status this would drive) are not built yet; there is no issue for them so far.
      const callSid = form.get('CallSid');
      const callStatus = form.get('CallStatus');
      req.log.info(
        { callSid, provider: 'twilio', callStatus, sequenceNumber: form.get('SequenceNumber'), callDurationSec: form.get('CallDuration') },
        'Twilio call status',
      );
      // A callback without its call id or status has nothing to store; it is answered like any
      // other (the body is ignored by Twilio), and a failed insert is logged, not answered 5xx.
      if (callSid && callStatus) {
        await events.record(
          { provider: 'twilio', callSid, status: callStatus, duration: form.get('CallDuration'), timestamp: form.get('Timestamp'), calledNumber: form.get('To'), detail: sipDetail(form.get('SipResponseCode')) },
          req.log,
        );
      }
      return reply.code(204).send();
    });
  }
};
