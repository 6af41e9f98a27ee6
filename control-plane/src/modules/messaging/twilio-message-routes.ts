import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '@vap/shared';
import type { PhoneNumberRepository } from '../telephony/phone-number-repository.js';
import { registerTwilioFormParser, verifyTwilioRequest } from '../telephony/twilio-request.js';
import type { TwilioForm } from '../telephony/twilio-request.js';
import type { MessagingChannel } from './repository.js';
import { MESSAGING_APOLOGY, TEXT_ONLY_REPLY } from './service.js';
import type { MessagingService } from './service.js';
import { messageTwiml } from './twiml-message.js';

/** What the Twilio messaging plugin needs. */
export interface TwilioMessageRouteOptions {
  service: MessagingService;
  numbers: Pick<PhoneNumberRepository, 'findInboundRoute'>;
  /** The Auth Token signatures are checked with; undefined refuses every request (fail closed). */
  authToken: string | undefined;
  /** The platform's public base URL (signatures cover the URL Twilio called). */
  publicUrl: string;
}

const ROUTE = { config: { scope: null }, schema: { hide: true } } as const;
const PREFIXES = ['', '/api/v1'] as const;
const WHATSAPP_PREFIX = 'whatsapp:';

/** WhatsApp addresses are `whatsapp:+E164` (reference/telephony-twilio.md §5); SMS ones plain E.164. */
function address(channel: MessagingChannel, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (channel !== 'whatsapp') return raw;
  return raw.startsWith(WHATSAPP_PREFIX) ? raw.slice(WHATSAPP_PREFIX.length) : undefined;
}

function twiml(reply: FastifyReply, text: string | null): FastifyReply {
  return reply.code(200).type('text/xml').send(messageTwiml(text));
}

/**
 * Twilio's inbound messaging callbacks: `POST /webhooks/twilio/sms` and
 * `POST /webhooks/twilio/whatsapp` (each also under `/api/v1`), form-encoded and signed
 * like the voice webhook (403 on a missing or bad `X-Twilio-Signature`, before anything is
 * read or written). `To` (WhatsApp: without `whatsapp:`) → active Twilio number → its
 * active agent; the message is stored on the sender's thread and answered with messaging
 * TwiML carrying the agent's reply.
 *
 * Never a 5xx: an unroutable message (unknown number, no or inactive agent) is answered
 * with an empty `<Response/>` (no reply is sent from a number nobody answers for); a
 * failure once the agent is known is answered with a short apology.
 */
export const twilioMessageRoutes: FastifyPluginAsync<TwilioMessageRouteOptions> = async (app, opts) => {
  registerTwilioFormParser(app);

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    const status = err instanceof AppError ? err.status : ((err as FastifyError).statusCode ?? 500);
    if (status < 500 && status !== 429) throw err; // the app's problem+json handler
    req.log.error({ err, provider: 'twilio' }, 'inbound message answered with apology');
    return twiml(reply, MESSAGING_APOLOGY);
  });

  const handle = (channel: MessagingChannel) => async (req: FastifyRequest, reply: FastifyReply) => {
    const form: TwilioForm | null = verifyTwilioRequest(req, reply, opts);
    if (!form) return reply;
    const messageSid = form.get('MessageSid') ?? form.get('SmsMessageSid');
    const to = address(channel, form.get('To'));
    const from = address(channel, form.get('From'));
    const log = req.log.child({ messageSid, provider: 'twilio', channel });
    if (!messageSid || !to || !from) {
      log.warn({ reason: 'missing-parameters' }, 'inbound message not routed');
      return twiml(reply, null);
    }
    const route = await opts.numbers.findInboundRoute('twilio', to);
    const agent = route?.agent;
    if (!route || !agent || agent.status !== 'active') {
      log.warn({ reason: !route ? 'unknown-number' : !agent ? 'no-agent' : 'agent-inactive', numberId: route?.numberId, agentId: agent?.id }, 'inbound message not routed');
      return twiml(reply, null);
    }
    const body = form.get('Body') ?? '';
    // MMS, voice notes, stickers: media without words. Nothing to store or ask the model.
    if (body.trim() === '') {
      log.info({ agentId: agent.id, numMedia: form.get('NumMedia') }, 'inbound message without text answered');
      return twiml(reply, TEXT_ONLY_REPLY);
    }
    const metadata: Record<string, string> = {};
    const profileName = form.get('ProfileName');
    if (channel === 'whatsapp' && profileName) metadata.profileName = profileName;
    const receipt = await opts.service.receive({ channel, provider: 'twilio', tenantId: agent.tenantId, agentId: agent.id, peer: from, messageId: messageSid, text: body, from, to, metadata });
    if (receipt.kind === 'unavailable') {
      log.warn({ reason: receipt.reason, agentId: agent.id }, 'inbound message not routed');
      return twiml(reply, null);
    }
    if (receipt.kind === 'duplicate') {
      log.info({ agentId: agent.id }, 'duplicate inbound message answered from its first delivery');
      return twiml(reply, receipt.reply);
    }
    const outcome = await opts.service.reply(receipt.pending);
    const conversationId = receipt.pending.conversation.id;
    if (outcome.failed) log.error({ err: outcome.error, conversationId, agentId: agent.id, tenantId: agent.tenantId }, 'inbound message answered with apology');
    else log.info({ conversationId, agentId: agent.id, tenantId: agent.tenantId }, 'inbound message answered');
    return twiml(reply, outcome.text);
  };

  for (const prefix of PREFIXES) {
    app.post(`${prefix}/webhooks/twilio/sms`, ROUTE, handle('sms'));
    app.post(`${prefix}/webhooks/twilio/whatsapp`, ROUTE, handle('whatsapp'));
  }
};
