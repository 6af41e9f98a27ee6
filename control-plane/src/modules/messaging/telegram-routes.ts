import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { sendProblem } from '../../http/problem.js';
import type { MessagingRepository } from './repository.js';
import { telegramUpdateSchema, telegramWebhookQuery } from './schemas.js';
import type { TelegramMessage } from './schemas.js';
import { MESSAGING_APOLOGY, TEXT_ONLY_REPLY } from './service.js';
import type { MessagingService } from './service.js';
import type { TelegramBotApi } from './telegram-bot-api.js';

/** Header Telegram sends the webhook's `secret_token` in (reference/messaging.md §1.1). */
export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/** What the Telegram webhook plugin needs. */
export interface TelegramRouteOptions {
  service: MessagingService;
  threads: Pick<MessagingRepository, 'agentTenant'>;
  /** The `secret_token` registered with `setWebhook`; undefined refuses every update (fail closed). */
  webhookSecret: string | undefined;
  /** Where replies are sent; null (no bot configured): updates are stored and answered, but the answer goes nowhere. */
  bot: TelegramBotApi | null;
}

/** Constant-time comparison of the header with the secret (hashed first, so lengths never leak either). */
function secretMatches(header: string | string[] | undefined, secret: string | undefined): boolean {
  if (secret === undefined || typeof header !== 'string') return false;
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(header), digest(secret));
}

/**
 * `POST /webhooks/telegram/message?agentId=agt_…` (also under `/api/v1`): Telegram's webhook.
 * The `X-Telegram-Bot-Api-Secret-Token` header must equal the configured secret (403
 * otherwise, checked before the body is read). The bot talks to the one agent its webhook
 * URL names; the agent's tenant owns the conversations. A text message is stored on the
 * chat's thread and answered with `sendMessage` after Telegram got its 200 (Telegram
 * retries anything else, and a model may take seconds). A message without text gets a
 * polite "text only" reply and nothing is stored; edits and other update kinds are ignored.
 */
export const telegramRoutes: FastifyPluginAsync<TelegramRouteOptions> = async (app, opts) => {
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Replies still being produced; closing the app waits for them.
  const inflight = new Set<Promise<void>>();
  app.addHook('onClose', async () => {
    await Promise.allSettled([...inflight]);
  });

  const send = (log: FastifyBaseLogger, message: TelegramMessage, produce: () => Promise<string>): void => {
    const task = (async () => {
      const text = await produce();
      if (!opts.bot) {
        log.warn({ chatId: message.chat.id }, 'no Telegram bot configured; reply not sent');
        return;
      }
      await opts.bot.sendMessage(message.chat.id, text, message.message_id);
    })()
      .catch((err: unknown) => log.error({ err, provider: 'telegram' }, 'Telegram reply not sent'))
      .finally(() => inflight.delete(task));
    inflight.add(task);
  };

  for (const prefix of ['', '/api/v1']) {
    r.post(
      `${prefix}/webhooks/telegram/message`,
      {
        config: { scope: null },
        schema: { hide: true, querystring: telegramWebhookQuery, body: telegramUpdateSchema },
        onRequest: async (req, reply) => {
          if (secretMatches(req.headers[TELEGRAM_SECRET_HEADER], opts.webhookSecret)) return;
          const reason = opts.webhookSecret === undefined ? 'no-secret-configured' : req.headers[TELEGRAM_SECRET_HEADER] === undefined ? 'missing-secret' : 'bad-secret';
          req.log.warn({ reason, provider: 'telegram' }, 'Telegram webhook rejected');
          return sendProblem(req, reply, 'forbidden', 'The X-Telegram-Bot-Api-Secret-Token header is missing or does not match.');
        },
      },
      async (req, reply) => {
        const { agentId } = req.query;
        const update = req.body;
        const message = update.message;
        const log = req.log.child({ provider: 'telegram', updateId: update.update_id, agentId });
        if (!message) {
          log.debug('Telegram update without a new message ignored');
          return reply.code(200).send({});
        }
        const text = message.text ?? '';
        if (text.trim() === '') {
          log.info({ chatId: message.chat.id }, 'Telegram message without text answered');
          send(log, message, async () => TEXT_ONLY_REPLY);
          return reply.code(200).send({});
        }
        const tenantId = await opts.threads.agentTenant(agentId);
        const receipt = tenantId
          ? await opts.service.receive({
              channel: 'telegram',
              provider: 'telegram',
              tenantId,
              agentId,
              peer: String(message.chat.id),
              // update_id is per bot: the bot's id keeps two bots' updates apart.
              messageId: `${opts.bot?.botId ?? 'bot'}:${update.update_id}`,
              text,
              from: null,
              to: null,
              metadata: {
                chatType: message.chat.type,
                ...(message.from?.username ? { username: message.from.username } : {}),
                ...(message.from?.first_name ? { firstName: message.from.first_name } : {}),
              },
            })
          : ({ kind: 'unavailable', reason: 'agent-not-found' } as const);
        if (receipt.kind === 'unavailable') {
          log.warn({ reason: receipt.reason }, 'Telegram message not routed; apology sent');
          send(log, message, async () => MESSAGING_APOLOGY);
        } else if (receipt.kind === 'duplicate') {
          log.info('duplicate Telegram update ignored');
        } else {
          const { pending } = receipt;
          send(log, message, async () => {
            const outcome = await opts.service.reply(pending);
            if (outcome.failed) log.error({ err: outcome.error, conversationId: pending.conversation.id, tenantId }, 'Telegram message answered with apology');
            else log.info({ conversationId: pending.conversation.id, tenantId }, 'Telegram message answered');
            return outcome.text;
          });
        }
        return reply.code(200).send({});
      },
    );
  }
};
