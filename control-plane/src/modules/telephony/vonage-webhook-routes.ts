import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, validationError, verifyVonageWebhook, vonageBearerToken } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { sendProblem } from '../../http/problem.js';
import { apologyAnswer } from './inbound-answer.js';
import { GatewayIntake } from './gateway-intake.js';
import { InboundCallRouter, logInboundDecision } from './inbound-call-router.js';
import { PhoneNumberRepository } from './phone-number-repository.js';
import { VonageCallStatus } from './vonage-call-status.js';
import type { VonageCallEvent } from './vonage-call-status.js';

/** What the Vonage webhook plugin needs; it builds its own repository and router from them. */
export interface VonageWebhookOptions {
  db: Db;
  /** The signature secret webhook JWTs are checked with; undefined refuses every request (fail closed). */
  signatureSecret: string | undefined;
  /** The media gateway's public base (`wss://…`) for the NCCO's WebSocket URI. */
  mediaGatewayPublicUrl: string;
  /** Clock the gateways' heartbeats are judged by, epoch ms (the one they are stored with). Default `Date.now`. */
  now?: () => number;
}

/** A JSON body kept raw: `payload_hash` covers the bytes Vonage sent, not a re-serialisation. */
class VonageBody {
  constructor(
    readonly raw: string,
    /** The parsed JSON; undefined when the body is not JSON. */
    readonly json: unknown,
  ) {}
}

function parseBody(raw: string): VonageBody {
  try {
    return new VonageBody(raw, JSON.parse(raw));
  } catch {
    return new VonageBody(raw, undefined);
  }
}

const PUBLIC = { scope: null } as const;
// Provider callbacks are not API operations: no bearer, no OpenAPI entry.
const ROUTE = { config: PUBLIC, schema: { hide: true } } as const;
const PREFIXES = ['', '/api/v1'] as const;

/** Vonage numbers come without the `+` (§ intro); stored numbers are E.164 with it. */
export function vonageE164(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const n = raw.trim();
  return /^\d{1,15}$/.test(n) ? `+${n}` : n;
}

function field(source: Record<string, unknown>, name: string): string | undefined {
  const v = source[name];
  if (typeof v === 'string') return v;
  return Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined;
}

/**
 * Vonage's callbacks (reference/telephony-vonage.md §1, §4, §6): the answer webhook
 * `/webhooks/vonage/voice/answer` (inbound call → NCCO; GET with query parameters by
 * default, POST JSON when the application says so) and the event webhook
 * `/webhooks/vonage/voice/event` (call status; POST JSON, or GET), each also under
 * `/api/v1`. Every request must carry `Authorization: Bearer <JWT>` signed with the
 * signature secret, fresh, with `payload_hash` matching the raw body (403 otherwise,
 * before anything is read or routed). JSON bodies are kept raw in this plugin only.
 *
 * The answer webhook never answers 5xx: an unroutable call or any failure is answered
 * 200 with an NCCO that apologises (and so ends the call).
 */
export const vonageWebhookRoutes: FastifyPluginAsync<VonageWebhookOptions> = async (app, opts) => {
  const router = new InboundCallRouter({ numbers: new PhoneNumberRepository(opts.db), mediaGatewayPublicUrl: opts.mediaGatewayPublicUrl, gateways: new GatewayIntake(opts.db, opts.now) });
  const calls = new VonageCallStatus(opts.db);

  // Scoped to this plugin: the rest of the API keeps the default JSON parser.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, parseBody(String(body))));

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    const status = err instanceof AppError ? err.status : ((err as FastifyError).statusCode ?? 500);
    if (!req.routeOptions.url?.endsWith('/vonage/voice/answer') || (status < 500 && status !== 429)) throw err; // the app's problem+json handler
    req.log.error({ err, reason: 'error' }, 'inbound call answered with apology');
    return reply.code(200).type('application/json').send(apologyAnswer('vonage').body);
  });

  /** The request's fields (query for GET, JSON object for POST) once the JWT checks out, or null after sending 403. */
  function verified(req: FastifyRequest, reply: FastifyReply): Record<string, unknown> | null {
    const body = req.body instanceof VonageBody ? req.body : undefined;
    const isGet = req.method === 'GET';
    const token = vonageBearerToken(req.headers.authorization);
    const check = opts.signatureSecret
      ? verifyVonageWebhook({ secret: opts.signatureSecret, token, rawBody: body?.raw ?? '', allowMissingPayloadHash: isGet })
      : ({ ok: false, reason: 'no-signature-secret' } as const);
    const reason = !check.ok ? check.reason : !isGet && !body ? 'not-json' : undefined;
    if (reason === undefined) {
      if (isGet) return { ...(req.query as Record<string, unknown>) };
      const json = body!.json;
      // A signed body that is not a JSON object: the carrier's, so a 422 naming it rather than a 403.
      if (json === null || typeof json !== 'object' || Array.isArray(json)) throw validationError('body', 'must be a JSON object');
      return json as Record<string, unknown>;
    }
    req.log.warn({ reason, path: req.routeOptions.url, provider: 'vonage' }, 'Vonage webhook rejected');
    sendProblem(req, reply, 'forbidden', 'The Authorization bearer JWT is missing, stale, not signed with the signature secret or does not match this body.');
    return null;
  }

  for (const prefix of PREFIXES) {
    const answer = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const params = verified(req, reply);
      if (!params) return reply;
      const callSid = field(params, 'uuid');
      const decision = await router.answer('vonage', { callSid, from: vonageE164(field(params, 'from')), to: vonageE164(field(params, 'to')) });
      logInboundDecision(req.log.child({ callSid, provider: 'vonage', conversationUuid: field(params, 'conversation_uuid') }), decision);
      return reply.code(200).type(decision.answer.contentType).send(decision.answer.body);
    };
    app.get(`${prefix}/webhooks/vonage/voice/answer`, ROUTE, answer);
    app.post(`${prefix}/webhooks/vonage/voice/answer`, ROUTE, answer);

    const event = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const params = verified(req, reply);
      if (!params) return reply;
      const e: VonageCallEvent = {};
      for (const name of ['status', 'uuid', 'call_uuid', 'conversation_uuid', 'direction', 'detail', 'duration', 'reason', 'timestamp', 'to'] as const) {
        const v = params[name];
        if (v !== undefined && typeof v !== 'string') throw validationError(name, 'must be a string');
        if (v !== undefined) e[name] = v;
      }
      const to = vonageE164(e.to);
      if (to !== undefined) e.to = to;
      if (e.status === undefined && e.reason === undefined) throw validationError('status', 'is required (or reason, for a call-flow error)');
      await calls.record(e, req.log);
      // Empty 204: for a synchronous connect's `disconnected` this means "no new NCCO", so the call ends.
      return reply.code(204).send();
    };
    app.get(`${prefix}/webhooks/vonage/voice/event`, ROUTE, event);
    app.post(`${prefix}/webhooks/vonage/voice/event`, ROUTE, event);
  }
};
