import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, TELNYX_SIGNATURE_HEADER, TELNYX_TIMESTAMP_HEADER, checkTelnyxSignature } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { sendProblem } from '../../http/problem.js';
import { apologyAnswer } from './inbound-answer.js';
import { GatewayIntake } from './gateway-intake.js';
import { InboundCallRouter, logInboundDecision } from './inbound-call-router.js';
import type { InboundRequest } from './inbound-call-router.js';
import { PhoneNumberRepository } from './phone-number-repository.js';
import { StreamTokens } from './stream-token.js';
import type { SecretBox } from '../../secret-box.js';

/** What the Telnyx webhook plugin needs; it builds its own repository and router from them. */
export interface TelnyxWebhookOptions {
  db: Db;
  /** Base64 raw Ed25519 public key webhooks are verified with; undefined refuses every request (fail closed). */
  publicKey: string | undefined;
  /** The media gateway's public base (`wss://…`) for stream URLs. */
  mediaGatewayPublicUrl: string;
  /** The platform's secret box: the stream token each answer carries is keyed from it (stream-token.ts). */
  secrets: SecretBox;
  /** Clock for the timestamp tolerance and the stream token's issue time, epoch ms (tests move it). Default `Date.now`. */
  now?: () => number;
}

/** The body exactly as received: the signature covers these bytes, so nothing parses it first. */
class RawBody {
  constructor(
    readonly text: string,
    readonly contentType: string,
  ) {}
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The call of a TeXML voice webhook. Documented form (reference/telephony-telnyx.md §1):
 * form-encoded with Twilio's names (`CallSid` = the Call Control id, `From`, `To`); unknown
 * fields are ignored. Tolerated, since the exact set is unconfirmed: a JSON object with the
 * same names, and a Call Control `call.initiated` envelope (`data.payload.call_control_id`,
 * `from`, `to`, §4). Anything unreadable yields no parameters (the router apologises).
 */
export function readTelnyxCall(rawBody: string, contentType: string): InboundRequest {
  const text = rawBody.trim();
  if (!contentType.includes('json') && !text.startsWith('{')) {
    const form = new URLSearchParams(text);
    return { callSid: str(form.get('CallSid')) ?? str(form.get('call_control_id')), from: str(form.get('From')), to: str(form.get('To')) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { callSid: undefined, from: undefined, to: undefined };
  }
  const obj = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const data = obj['data'] as Record<string, unknown> | undefined;
  const payload = (typeof data === 'object' && data !== null ? data['payload'] : undefined) as Record<string, unknown> | undefined;
  if (typeof payload === 'object' && payload !== null) return { callSid: str(payload['call_control_id']), from: str(payload['from']), to: str(payload['to']) };
  return { callSid: str(obj['CallSid']) ?? str(obj['call_control_id']), from: str(obj['From']) ?? str(obj['from']), to: str(obj['To']) ?? str(obj['to']) };
}

const PUBLIC = { scope: null } as const;
// Provider callbacks are not API operations: no bearer, no OpenAPI entry.
const ROUTE = { config: PUBLIC, schema: { hide: true } } as const;
const PREFIXES = ['', '/api/v1'] as const;

/**
 * Telnyx's TeXML voice webhook: `POST /webhooks/telnyx/voice` (inbound call → TeXML), also
 * under `/api/v1`. Every request must carry a valid Ed25519 `telnyx-signature-ed25519` over
 * `telnyx-timestamp|raw body`, the timestamp within 300 s (§5); otherwise 403 and nothing
 * is looked up. Bodies are kept raw in this plugin (the signature covers their bytes); the
 * rest of the API stays JSON-only.
 *
 * Like Twilio's, the voice webhook never answers 5xx: an unroutable call or any failure is
 * answered 200 with a spoken apology and a hang-up.
 */
export const telnyxWebhookRoutes: FastifyPluginAsync<TelnyxWebhookOptions> = async (app, opts) => {
  const router = new InboundCallRouter({
    numbers: new PhoneNumberRepository(opts.db),
    mediaGatewayPublicUrl: opts.mediaGatewayPublicUrl,
    streamTokens: new StreamTokens(opts.secrets, opts.now),
    gateways: new GatewayIntake(opts.db, opts.now),
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 64 * 1024 }, (req, body, done) => done(null, new RawBody(String(body), String(req.headers['content-type'] ?? ''))));

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    const status = err instanceof AppError ? err.status : ((err as FastifyError).statusCode ?? 500);
    if (!req.routeOptions.url?.endsWith('/telnyx/voice') || (status < 500 && status !== 429)) throw err; // the app's problem+json handler
    req.log.error({ err, reason: 'error', provider: 'telnyx' }, 'inbound call answered with apology');
    return reply.code(200).type('text/xml').send(apologyAnswer('telnyx').body);
  });

  /** The raw body when the signature holds, or null after sending 403. */
  function verified(req: FastifyRequest, reply: FastifyReply): RawBody | null {
    const header = (name: string): string | undefined => {
      const v = req.headers[name];
      return typeof v === 'string' ? v : undefined;
    };
    const body = req.body instanceof RawBody ? req.body : new RawBody('', '');
    const failure = checkTelnyxSignature({ publicKey: opts.publicKey, signature: header(TELNYX_SIGNATURE_HEADER), timestamp: header(TELNYX_TIMESTAMP_HEADER), rawBody: body.text, nowSec: Math.floor((opts.now ?? Date.now)() / 1000) });
    if (failure === null) return body;
    req.log.warn({ reason: failure, path: req.routeOptions.url }, 'Telnyx webhook rejected');
    sendProblem(req, reply, 'forbidden', 'The telnyx-signature-ed25519 / telnyx-timestamp headers are missing, stale or do not match this request.');
    return null;
  }

  for (const prefix of PREFIXES) {
    app.post(`${prefix}/webhooks/telnyx/voice`, ROUTE, async (req, reply) => {
      const body = verified(req, reply);
      if (!body) return reply;
      const call = readTelnyxCall(body.text, body.contentType);
      const decision = await router.answer('telnyx', call);
      logInboundDecision(req.log.child({ callSid: call.callSid, provider: 'telnyx' }), decision);
      return reply.code(200).type(decision.answer.contentType).send(decision.answer.body);
    });
  }
};
