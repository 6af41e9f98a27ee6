/**
 * Telegram wiring from the configuration: sandbox mode (development, no bot token) runs the
 * Bot API simulator and keeps a generated webhook secret in DATA_DIR; production without a
 * secret refuses every update.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TelegramBotApi } from '../../src/modules/messaging/telegram-bot-api.js';
import { TELEGRAM_SECRET_FILE, startTelegram } from '../../src/modules/messaging/telegram-runtime.js';
import { createTestApp } from '../helpers.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'vap-telegram-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const settings = { botToken: undefined, webhookSecret: undefined, apiBaseUrl: 'https://api.telegram.org' };

describe('startTelegram', () => {
  it('runs the Bot API simulator and a generated secret in development without a token', async () => {
    const first = await startTelegram(settings, { appEnv: 'development', dataDir });
    try {
      expect(first.simulator).not.toBeNull();
      const me = await first.bot!.call<{ is_bot: boolean; id: number }>('getMe', {});
      expect(me).toMatchObject({ is_bot: true, id: first.simulator!.botId });
      const file = path.join(dataDir, TELEGRAM_SECRET_FILE);
      expect(readFileSync(file, 'utf8').trim()).toBe(first.webhookSecret);
      expect(first.webhookSecret).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const again = await startTelegram(settings, { appEnv: 'development', dataDir });
      expect(again.webhookSecret).toBe(first.webhookSecret);
      await again.close();
    } finally {
      await first.close();
    }
  });

  it('uses the configured token, base URL and secret as given', async () => {
    const live = await startTelegram({ botToken: '123456:ABC-def', webhookSecret: 'configured_secret', apiBaseUrl: 'http://127.0.0.1:9' }, { appEnv: 'production', dataDir });
    expect(live.simulator).toBeNull();
    expect(live.webhookSecret).toBe('configured_secret');
    expect(live.bot).toBeInstanceOf(TelegramBotApi);
    expect(live.bot!.botId).toBe('123456');
    // Nothing listens on port 9: the client reports it as a Bot API error, not a crash.
    await expect(live.bot!.sendMessage(1, 'x')).rejects.toMatchObject({ name: 'TelegramApiError', errorCode: 0 });
  });

  it('has no secret in production without TELEGRAM_WEBHOOK_SECRET, and the webhook then refuses every update', async () => {
    const prod = await startTelegram(settings, { appEnv: 'production', dataDir: path.join(dataDir, 'prod') });
    expect(prod).toMatchObject({ bot: null, webhookSecret: undefined, simulator: null });
    const t = await createTestApp();
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/webhooks/telegram/message?agentId=agt_00000000000000000000000000',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'anything' },
        payload: JSON.stringify({ update_id: 1 }),
      });
      expect(res.statusCode).toBe(403);
    } finally {
      await t.close();
    }
  });
});
