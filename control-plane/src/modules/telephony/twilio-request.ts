import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { validateTwilioSignature } from '@vap/shared';
import { sendProblem } from '../../http/problem.js';

/** A parsed form body, kept apart from JSON bodies (a JSON object can never pass for one). */
export class TwilioForm {
  constructor(
    readonly raw: string,
    readonly params: Record<string, string | string[]>,
  ) {}

  /** First value of a parameter (Twilio sends each voice and messaging parameter once). */
  get(name: string): string | undefined {
    const v = this.params[name];
    return Array.isArray(v) ? v[0] : v;
  }
}

/** Parses `application/x-www-form-urlencoded`, keeping repeated names as arrays (the signature covers every value). */
export function parseTwilioForm(raw: string): TwilioForm {
  const params: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const prev = params[name];
    params[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return new TwilioForm(raw, params);
}

/**
 * Adds the form parser to one encapsulated plugin: Twilio's callbacks are form-encoded,
 * the rest of the API stays JSON-only.
 */
export function registerTwilioFormParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, parseTwilioForm(String(body))));
}

/** What a Twilio signature is checked with. */
export interface TwilioSignatureCheck {
  /** The Auth Token; undefined refuses every request (fail closed). */
  authToken: string | undefined;
  /** The platform's public base URL: signatures cover the URL Twilio called, not ours behind a proxy. */
  publicUrl: string;
}

/**
 * The verified form of a Twilio callback, or null after sending 403 (problem+json): the
 * `X-Twilio-Signature` must match the public URL (path and query as received) and the
 * form's parameters (reference/telephony-twilio.md §3). Nothing else has run yet, so a
 * refused request has no side effects.
 */
export function verifyTwilioRequest(req: FastifyRequest, reply: FastifyReply, check: TwilioSignatureCheck): TwilioForm | null {
  const header = req.headers['x-twilio-signature'];
  const signature = typeof header === 'string' ? header : undefined;
  const form = req.body instanceof TwilioForm ? req.body : undefined;
  if (form && check.authToken && validateTwilioSignature({ authToken: check.authToken, url: `${check.publicUrl}${req.url}`, params: form.params, signature })) return form;
  const reason = !check.authToken ? 'no-auth-token' : !signature ? 'missing-signature' : !form ? 'not-form-encoded' : 'bad-signature';
  req.log.warn({ reason, path: req.routeOptions.url }, 'Twilio webhook rejected');
  sendProblem(req, reply, 'forbidden', 'The X-Twilio-Signature header is missing or does not match this request.');
  return null;
}
