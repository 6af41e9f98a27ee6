import { readOrCreateTokenFile } from '../telephony/local-token-file.js';
import { TelegramBotApi } from './telegram-bot-api.js';
import { TelegramSimulator } from './telegram-simulator.js';

/** File under DATA_DIR holding the generated webhook secret (development without TELEGRAM_WEBHOOK_SECRET). */
export const TELEGRAM_SECRET_FILE = 'telegram-webhook-secret';

/** Telegram settings from the config (`TELEGRAM_*`). */
export interface TelegramSettings {
  botToken: string | undefined;
  webhookSecret: string | undefined;
  apiBaseUrl: string;
}

/** The bot replies go out through and the secret updates are checked with. */
export interface TelegramRuntime {
  /** Null: no bot token (production without Telegram): updates are still verified and stored, replies are not sent. */
  bot: TelegramBotApi | null;
  /** Undefined refuses every update (production without TELEGRAM_WEBHOOK_SECRET). */
  webhookSecret: string | undefined;
  /** The simulator standing in for the Bot API (sandbox), or null. */
  simulator: TelegramSimulator | null;
  /** Where the secret came from: `config`, the file's path, or `none`. */
  secretSource: string;
  describe(): string;
  close(): Promise<void>;
}

/**
 * Telegram from the configuration. With `TELEGRAM_BOT_TOKEN`, the Bot API at
 * `TELEGRAM_API_BASE_URL`. Without it in development (sandbox), a Telegram simulator started
 * here on loopback plays the Bot API. The webhook secret is `TELEGRAM_WEBHOOK_SECRET`, else
 * in development one generated into `DATA_DIR/telegram-webhook-secret` (so local tools can
 * deliver updates with it), else none and every update is refused.
 */
export async function startTelegram(settings: TelegramSettings, opts: { appEnv: 'development' | 'production'; dataDir: string }): Promise<TelegramRuntime> {
  const development = opts.appEnv === 'development';
  let secretSource = settings.webhookSecret ? 'config' : 'none';
  let webhookSecret = settings.webhookSecret;
  if (!webhookSecret && development) {
    const { token, file } = readOrCreateTokenFile(opts.dataDir, TELEGRAM_SECRET_FILE, 24);
    webhookSecret = token;
    secretSource = file;
  }
  if (settings.botToken) {
    const bot = new TelegramBotApi({ token: settings.botToken, baseUrl: settings.apiBaseUrl });
    return { bot, webhookSecret, simulator: null, secretSource, describe: () => `telegram: live (${settings.apiBaseUrl})`, close: async () => undefined };
  }
  if (!development) return { bot: null, webhookSecret, simulator: null, secretSource, describe: () => 'telegram: no bot token (replies not sent)', close: async () => undefined };
  const simulator = await TelegramSimulator.start();
  const bot = new TelegramBotApi({ token: simulator.token, baseUrl: simulator.url });
  return { bot, webhookSecret, simulator, secretSource, describe: () => `telegram: simulated (${simulator.url})`, close: () => simulator.close() };
}
