/**
 * A control plane for the messaging callbacks on a database of its own (the thread tests
 * run the lost-call watchdog, which looks at every tenant's conversations), listening on
 * loopback so the Telegram simulator can deliver updates over a real socket, with the
 * OpenAI simulator behind the agent's LLM and the Telegram simulator behind the bot.
 */
import { randomBytes, randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { expect } from 'vitest';
import { InProcessBus } from '@vap/shared';
import { OpenAiSimulator } from '@vap/voice-pipeline/simulators';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { analysisLlms } from '../../src/modules/conversations/analysis-llm.js';
import { TelegramBotApi } from '../../src/modules/messaging/telegram-bot-api.js';
import { TelegramSimulator } from '../../src/modules/messaging/telegram-simulator.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, createTenant, isolatedDatabase, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { TELEPHONY_ENV } from '../telephony-fixtures.js';

/** The webhook secret the test app checks Telegram updates against. */
export const TELEGRAM_SECRET = 'test_telegram-secret_0123456789';

export interface MessagingWorld {
  app: FastifyInstance;
  database: Database;
  /** Where the app listens (http://127.0.0.1:port). */
  url: string;
  openai: OpenAiSimulator;
  telegram: TelegramSimulator;
  tenant: TestTenant;
  close(): Promise<void>;
}

export async function messagingWorld(): Promise<MessagingWorld> {
  const iso = await isolatedDatabase();
  const openai = await OpenAiSimulator.start({ apiKey: 'sk-test-messaging' });
  const telegram = await TelegramSimulator.start();
  const app = await buildApp(testConfig({ ...TELEPHONY_ENV }), {
    database: iso.database,
    bus: new InProcessBus(),
    secrets: new SecretBox(TEST_SECRET_KEY),
    logger: pino({ level: 'silent' }),
    messagingLlms: analysisLlms({ apiKey: openai.apiKey, baseUrl: openai.url, simulated: true }),
    telegram: { bot: new TelegramBotApi({ token: telegram.token, baseUrl: telegram.url }), webhookSecret: TELEGRAM_SECRET },
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const tenant = await createTenant(iso.database);
  return {
    app,
    database: iso.database,
    url,
    openai,
    telegram,
    tenant,
    close: async () => {
      await app.close();
      await openai.close();
      await telegram.close();
      await iso.drop();
    },
  };
}

/** A sender number no other test uses. */
export function randomSender(): string {
  return `+1555${String(randomInt(0, 10_000_000)).padStart(7, '0')}`;
}

/** Twilio's inbound-message parameters (reference/telephony-twilio.md §5); WhatsApp addresses get `whatsapp:`. */
export function messageParams(channel: 'sms' | 'whatsapp', to: string, from: string, body: string, overrides: Record<string, string> = {}): Record<string, string> {
  const prefix = channel === 'whatsapp' ? 'whatsapp:' : '';
  const sid = `SM${randomBytes(16).toString('hex')}`;
  return {
    MessageSid: sid,
    SmsMessageSid: sid,
    SmsSid: sid,
    AccountSid: 'AC00000000000000000000000000000001',
    From: `${prefix}${from}`,
    To: `${prefix}${to}`,
    Body: body,
    NumMedia: '0',
    NumSegments: '1',
    SmsStatus: 'received',
    ApiVersion: '2010-04-01',
    ...(channel === 'whatsapp' ? { ProfileName: 'Ana', WaId: from.slice(1), MessageType: 'text' } : {}),
    ...overrides,
  };
}

/** The `<Message>` text of a messaging TwiML answer, or null for an empty `<Response/>`. */
export function twimlMessage(body: string): string | null {
  expect(body.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
  if (/<Response\/>$/.test(body)) return null;
  const m = /^<\?xml[^>]*\?><Response><Message>([\s\S]*)<\/Message><\/Response>$/.exec(body);
  expect(m, body).not.toBeNull();
  return m![1]!.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}

/** Conversations and messages stored for a tenant (what a refused callback must leave unchanged). */
export async function storedCounts(database: Database, tenantId: string): Promise<{ conversations: number; messages: number }> {
  const res = await database.db.execute<{ conversations: number; messages: number }>(sql`
    select (select count(*)::int from conversations where tenant_id = ${tenantId}) as conversations,
           (select count(*)::int from conversation_messages m join conversations c on c.id = m.conversation_id where c.tenant_id = ${tenantId}) as messages`);
  return res.rows[0]!;
}

/** The tenant's conversations of one channel, newest first. */
export async function conversationsOf(database: Database, tenantId: string, channel: string): Promise<{ id: string; status: string; provider: string; caller_phone: string | null; metadata: Record<string, unknown> }[]> {
  const res = await database.db.execute<{ id: string; status: string; provider: string; caller_phone: string | null; metadata: Record<string, unknown> }>(
    sql`select id, status, provider, caller_phone, metadata from conversations where tenant_id = ${tenantId} and channel = ${channel} order by started_at desc`,
  );
  return res.rows;
}

/** Polls `probe` until it returns a value (10 ms steps, 5 s at most). */
export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let updateSeq = randomInt(100_000_000, 200_000_000);

/** A Telegram Update carrying one private-chat message (reference/messaging.md §1.3); `content` replaces `text`. */
export function telegramUpdate(chatId: number, content: Record<string, unknown> | string, updateId = ++updateSeq): Record<string, unknown> {
  const body = typeof content === 'string' ? { text: content } : content;
  return {
    update_id: updateId,
    message: {
      message_id: randomInt(1, 1_000_000),
      from: { id: chatId, is_bot: false, first_name: 'Ana', username: 'ana_s', language_code: 'pt' },
      chat: { id: chatId, type: 'private', first_name: 'Ana', username: 'ana_s' },
      date: Math.floor(Date.now() / 1000),
      ...body,
    },
  };
}
