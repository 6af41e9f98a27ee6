import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Database } from '../../db/database.js';
import { startAnalysisLlms } from '../conversations/analysis-llm.js';
import type { AnalysisLlms } from '../conversations/analysis-llm.js';
import { ConversationRepository } from '../conversations/repository.js';
import { IdempotencyStore } from '../idempotency/idempotency-store.js';
import { PhoneNumberRepository } from '../telephony/phone-number-repository.js';
import { MessagingRepository } from './repository.js';
import { MessagingService } from './service.js';
import { TelegramBotApi } from './telegram-bot-api.js';
import { telegramRoutes } from './telegram-routes.js';
import type { TelegramSettings } from './telegram-runtime.js';
import { twilioMessageRoutes } from './twilio-message-routes.js';

/** What the messaging callbacks need from the app. */
export interface MessagingRouteOptions {
  database: Database;
  log: Logger;
  /** The LLM endpoint replies run on (the control plane's analysis endpoint); default: `startAnalysisLlms(openai)` on first use, stopped with the app. */
  llms?: AnalysisLlms;
  openai: { apiKey: string | undefined; baseUrl: string | undefined };
  /** Twilio Auth Token for signatures (undefined refuses every request). */
  twilioAuthToken: string | undefined;
  publicUrl: string;
  /** The bot replies go out through and the webhook secret (`startTelegram`); default from `settings` (no simulator). */
  telegram?: { bot: TelegramBotApi | null; webhookSecret: string | undefined };
  telegramSettings: TelegramSettings;
  now?: () => number;
}

/**
 * The messaging callbacks (Twilio SMS and WhatsApp, Telegram) with the service they share.
 * Registered at the root: the callbacks are public and live under `/webhooks` and `/api/v1/webhooks`.
 */
export const messagingRoutes: FastifyPluginAsync<MessagingRouteOptions> = async (app, opts) => {
  let started: ReturnType<typeof startAnalysisLlms> | undefined;
  const llms = opts.llms ? async () => opts.llms! : () => (started ??= startAnalysisLlms(opts.openai));
  app.addHook('onClose', async () => {
    if (started) await (await started).close();
  });
  const threads = new MessagingRepository(opts.database.db);
  const service = new MessagingService({
    conversations: new ConversationRepository(opts.database.db),
    threads,
    idempotency: new IdempotencyStore(opts.database.pool),
    llms,
    log: opts.log,
    ...(opts.now ? { now: opts.now } : {}),
  });
  const settings = opts.telegramSettings;
  const telegram = opts.telegram ?? { bot: settings.botToken ? new TelegramBotApi({ token: settings.botToken, baseUrl: settings.apiBaseUrl }) : null, webhookSecret: settings.webhookSecret };
  await app.register(twilioMessageRoutes, { service, numbers: new PhoneNumberRepository(opts.database.db), authToken: opts.twilioAuthToken, publicUrl: opts.publicUrl });
  await app.register(telegramRoutes, { service, threads, webhookSecret: telegram.webhookSecret, bot: telegram.bot });
};
