/**
 * The Telegram webhook end to end: the Telegram simulator registers the platform's webhook
 * with `setWebhook`, delivers Updates over a real socket with the secret header, and
 * records the `sendMessage` the platform answers with (the agent's LLM reply from the
 * OpenAI simulator).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MESSAGING_APOLOGY, TEXT_ONLY_REPLY } from '../../src/modules/messaging/service.js';
import { TelegramBotApi } from '../../src/modules/messaging/telegram-bot-api.js';
import { deliverTelegramUpdate } from '../../src/modules/messaging/telegram-simulator.js';
import type { TelegramSimRequest } from '../../src/modules/messaging/telegram-simulator.js';
import { call, createAgentFor } from '../helpers.js';
import { TELEGRAM_SECRET, conversationsOf, eventually, messagingWorld, storedCounts, telegramUpdate } from './messaging.fixtures.js';
import type { MessagingWorld } from './messaging.fixtures.js';

let w: MessagingWorld;
let agentId: string;
let webhookUrl: string;

beforeAll(async () => {
  w = await messagingWorld();
  agentId = ((await createAgentFor(w.app, w.tenant.key)) as { id: string }).id;
  expect((await call(w.app, w.tenant.key, 'POST', `/api/v1/agents/${agentId}/activate`)).statusCode).toBe(200);
  webhookUrl = `${w.url}/webhooks/telegram/message?agentId=${agentId}`;
});
afterAll(async () => w?.close());
beforeEach(async () => {
  w.openai.reset();
  w.telegram.reset();
  // Registered the way an operator does it: setWebhook through the Bot API.
  await new TelegramBotApi({ token: w.telegram.token, baseUrl: w.telegram.url }).call('setWebhook', { url: webhookUrl, secret_token: TELEGRAM_SECRET, allowed_updates: ['message'] });
});

const unique = (what: string) => `${what} ${randomBytes(4).toString('hex')}`;
const chat = () => randomInt(1_000_000, 9_000_000_000_000);

/** The sendMessage calls to one chat, once `n` of them arrived. */
function sentTo(chatId: number, n = 1): Promise<TelegramSimRequest[]> {
  return eventually(() => {
    const sent = w.telegram.calls('sendMessage').filter((r) => r.params.chat_id === chatId);
    return sent.length >= n ? sent : undefined;
  }, `${n} sendMessage to ${chatId}`);
}

async function threadsOf(chatId: number): Promise<{ id: string; provider: string; metadata: Record<string, unknown> }[]> {
  return (await conversationsOf(w.database, w.tenant.tenantId, 'telegram')).filter((c) => c.metadata.peer === String(chatId));
}

async function messagesOf(conversationId: string): Promise<{ role: string; content: string }[]> {
  const res = await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/messages`);
  expect(res.statusCode).toBe(200);
  return (res.json() as { messages: { role: string; content: string }[] }).messages.map((m) => ({ role: m.role, content: m.content }));
}

describe('POST /webhooks/telegram/message', () => {
  it('stores the text on a telegram conversation and replies through sendMessage with the LLM answer', async () => {
    const chatId = chat();
    const question = unique('Can I move my appointment to Friday?');
    w.openai.addReply({ match: question, reply: 'Done: moved to Friday 10:00.' });
    const update = telegramUpdate(chatId, question);
    const res = await w.telegram.deliver(update);
    expect(res.status).toBe(200);

    const [sent] = await sentTo(chatId);
    expect(sent!.status).toBe(200);
    expect(sent!.token).toBe(w.telegram.token);
    expect(sent!.params).toMatchObject({ chat_id: chatId, text: 'Done: moved to Friday 10:00.', reply_parameters: { message_id: (update.message as { message_id: number }).message_id } });

    const [thread] = await threadsOf(chatId);
    expect(thread).toMatchObject({ provider: 'telegram', metadata: { peer: String(chatId), chatType: 'private', username: 'ana_s', firstName: 'Ana' } });
    const conv = (await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${thread!.id}`)).json() as Record<string, unknown>;
    expect(conv).toMatchObject({ agentId, channel: 'telegram', direction: 'inbound', status: 'in_progress', caller: { phoneNumber: null } });
    expect(await messagesOf(thread!.id)).toEqual([
      { role: 'user', content: question },
      { role: 'agent', content: 'Done: moved to Friday 10:00.' },
    ]);
    const system = (w.openai.requests[0]!.body as { messages: { role: string; content: string }[] }).messages[0]!;
    expect(system.content).toContain('Telegram conversation');
  });

  it('keeps one conversation per chat and gives the LLM the chat history', async () => {
    const chatId = chat();
    const first = unique('hello');
    const second = unique('what did I just say?');
    await w.telegram.deliver(telegramUpdate(chatId, first));
    await sentTo(chatId, 1);
    await w.telegram.deliver(telegramUpdate(chatId, second));
    const sent = await sentTo(chatId, 2);
    expect(sent.map((s) => s.params.text)).toEqual([`You said: ${first}.`, `You said: ${second}.`]);
    const threads = await threadsOf(chatId);
    expect(threads).toHaveLength(1);
    expect(await messagesOf(threads[0]!.id)).toHaveLength(4);
    expect((w.openai.requests[1]!.body as { messages: unknown[] }).messages.slice(1)).toEqual([
      { role: 'user', content: first },
      { role: 'assistant', content: `You said: ${first}.` },
      { role: 'user', content: second },
    ]);
    // Another chat with the same bot is another conversation.
    const other = chat();
    await w.telegram.deliver(telegramUpdate(other, unique('hi')));
    await sentTo(other);
    expect(await threadsOf(other)).toHaveLength(1);
  });

  it('stores a redelivered update_id once and does not reply twice', async () => {
    const chatId = chat();
    const update = telegramUpdate(chatId, unique('only once please'));
    expect((await w.telegram.deliver(update)).status).toBe(200);
    await sentTo(chatId);
    expect((await w.telegram.deliver(update)).status).toBe(200);
    // Give a wrongly sent second reply the time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(w.telegram.calls('sendMessage').filter((r) => r.params.chat_id === chatId)).toHaveLength(1);
    const [thread] = await threadsOf(chatId);
    expect(await messagesOf(thread!.id)).toHaveLength(2);
    expect(w.openai.requests).toHaveLength(1);
  });

  it('refuses a wrong or missing secret token with 403, storing and sending nothing', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const chatId = chat();
    const wrong = await deliverTelegramUpdate(webhookUrl, 'not-the-secret', telegramUpdate(chatId, 'forged'));
    expect(wrong.status).toBe(403);
    expect(JSON.parse(wrong.body)).toMatchObject({ status: 403 });
    expect((await deliverTelegramUpdate(webhookUrl, null, telegramUpdate(chatId, 'forged'))).status).toBe(403);
    // The secret is checked before the body: a refused request gets 403 even when the body is not an Update.
    expect((await deliverTelegramUpdate(webhookUrl, `${TELEGRAM_SECRET}x`, { nonsense: true })).status).toBe(403);
    expect((await deliverTelegramUpdate(`${w.url}/api/v1/webhooks/telegram/message?agentId=${agentId}`, 'nope', telegramUpdate(chatId, 'forged'))).status).toBe(403);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
    expect(w.telegram.calls('sendMessage')).toHaveLength(0);
    expect(w.openai.requests).toHaveLength(0);
  });

  it('answers a voice note politely, stores nothing, and ignores edited messages', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const chatId = chat();
    const voice = telegramUpdate(chatId, { voice: { file_id: 'AwACAgQAAxkBAAIB', file_unique_id: 'AgADxx', duration: 4, mime_type: 'audio/ogg', file_size: 15_872 } });
    expect((await w.telegram.deliver(voice)).status).toBe(200);
    const [sent] = await sentTo(chatId);
    expect(sent!.params.text).toBe(TEXT_ONLY_REPLY);
    const edited = telegramUpdate(chatId, 'edited text');
    expect((await w.telegram.deliver({ update_id: edited.update_id, edited_message: { ...(edited.message as object), edit_date: 1717243300 } })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(w.telegram.calls('sendMessage')).toHaveLength(1);
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
    expect(w.openai.requests).toHaveLength(0);
  });

  it('apologises to the chat when the agent does not exist, storing nothing', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const chatId = chat();
    const res = await deliverTelegramUpdate(`${w.url}/webhooks/telegram/message?agentId=agt_00000000000000000000000000`, TELEGRAM_SECRET, telegramUpdate(chatId, 'anyone there?'));
    expect(res.status).toBe(200);
    const [sent] = await sentTo(chatId);
    expect(sent!.params.text).toBe(MESSAGING_APOLOGY);
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
  });

  it('answers 400/422 naming the field for a webhook URL without a valid agentId or a body that is not an Update', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    // Missing required parameters are 400, well-formed but wrong ones 422 (the API's rule).
    const noAgent = await deliverTelegramUpdate(`${w.url}/webhooks/telegram/message`, TELEGRAM_SECRET, telegramUpdate(chat(), 'hi'));
    expect(noAgent.status).toBe(400);
    expect(JSON.parse(noAgent.body).errors).toEqual([expect.objectContaining({ field: 'agentId' })]);
    const badAgent = await deliverTelegramUpdate(`${w.url}/webhooks/telegram/message?agentId=bob`, TELEGRAM_SECRET, telegramUpdate(chat(), 'hi'));
    expect(badAgent.status).toBe(422);
    expect(JSON.parse(badAgent.body).errors).toEqual([expect.objectContaining({ field: 'agentId' })]);
    const notUpdate = await deliverTelegramUpdate(webhookUrl, TELEGRAM_SECRET, { ...telegramUpdate(chat(), 'hi'), update_id: 'seven' });
    expect(notUpdate.status).toBe(422);
    expect(JSON.parse(notUpdate.body).errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'update_id' })]));
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
  });

  it('stores the reply even when sendMessage fails, and the simulator answers the Bot API error envelope', async () => {
    const chatId = chat();
    w.telegram.failNext(429, 'Too Many Requests: retry after 1');
    const text = unique('flood');
    await w.telegram.deliver(telegramUpdate(chatId, text));
    const [refused] = await sentTo(chatId);
    expect(refused!.status).toBe(429);
    const [thread] = await eventually(async () => {
      const t = await threadsOf(chatId);
      return t.length > 0 && (await messagesOf(t[0]!.id)).length === 2 ? t : undefined;
    }, 'the stored reply');
    expect(await messagesOf(thread!.id)).toEqual([
      { role: 'user', content: text },
      { role: 'agent', content: `You said: ${text}.` },
    ]);
    await expect(new TelegramBotApi({ token: '1:wrong', baseUrl: w.telegram.url }).sendMessage(chatId, 'x')).rejects.toMatchObject({ errorCode: 401, description: 'Unauthorized' });
  });
});
