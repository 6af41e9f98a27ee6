/**
 * Twilio SMS and WhatsApp callbacks end to end: a signed form POST is routed by its `To`
 * number to the agent, stored on the sender's thread, answered by the agent's LLM (the
 * OpenAI simulator behind the real adapter) and returned as messaging TwiML.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { computeTwilioSignature } from '@vap/shared';
import type { OpenAiSimulator } from '@vap/voice-pipeline/simulators';
import { DEFAULT_LOST_CALL_RULES } from '../../src/modules/conversations/call-service.js';
import { ConversationRepository } from '../../src/modules/conversations/repository.js';
import { Housekeeping } from '../../src/modules/housekeeping/housekeeping.js';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency-store.js';
import { MessagingRepository } from '../../src/modules/messaging/repository.js';
import { MESSAGING_APOLOGY, MessagingService, TEXT_ONLY_REPLY, THREAD_IDLE_MS } from '../../src/modules/messaging/service.js';
import { RateLimiter } from '../../src/modules/rate-limit/rate-limiter.js';
import { call } from '../helpers.js';
import { TELEPHONY_ENV, agentWithNumber, postTwilio, randomE164 } from '../telephony-fixtures.js';
import { conversationsOf, messageParams, messagingWorld, randomSender, storedCounts, twimlMessage } from './messaging.fixtures.js';
import type { MessagingWorld } from './messaging.fixtures.js';

let w: MessagingWorld;
let routed: { agentId: string; phoneNumber: string };

beforeAll(async () => {
  w = await messagingWorld();
  routed = await agentWithNumber(w.app, w.database, w.tenant);
});
afterAll(async () => w?.close());
beforeEach(() => w.openai.reset());

const unique = (what: string) => `${what} ${randomBytes(4).toString('hex')}`;

/** The chat requests the OpenAI simulator saw whose last user message is `text`. */
function llmRequestsFor(text: string): OpenAiSimulator['requests'] {
  return w.openai.requests.filter((r) => {
    const messages = (r.body as { messages?: { role: string; content: string }[] }).messages ?? [];
    return messages.findLast((m) => m.role === 'user')?.content === text;
  });
}

async function messagesOf(conversationId: string): Promise<{ role: string; content: string }[]> {
  const res = await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/messages`);
  expect(res.statusCode).toBe(200);
  return (res.json() as { messages: { role: string; content: string }[] }).messages.map((m) => ({ role: m.role, content: m.content }));
}

async function threadOf(channel: 'sms' | 'whatsapp', sender: string): Promise<{ id: string; status: string; provider: string; metadata: Record<string, unknown> }[]> {
  return (await conversationsOf(w.database, w.tenant.tenantId, channel)).filter((c) => c.metadata.peer === sender);
}

describe('POST /webhooks/twilio/sms', () => {
  it('answers with TwiML carrying the agent LLM reply and stores both messages on an sms conversation', async () => {
    const sender = randomSender();
    const question = unique('What are your opening hours?');
    w.openai.addReply({ match: question, reply: 'We open at 9 <am> & close at "5".' });
    const res = await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, question));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/xml/);
    expect(res.body).toContain('We open at 9 &lt;am&gt; &amp; close at &quot;5&quot;.');
    expect(twimlMessage(res.body)).toBe('We open at 9 <am> & close at "5".');

    const [thread] = await threadOf('sms', sender);
    const conv = (await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${thread!.id}`)).json() as Record<string, unknown>;
    expect(conv).toMatchObject({ agentId: routed.agentId, channel: 'sms', direction: 'inbound', status: 'in_progress', caller: { phoneNumber: sender } });
    expect(await messagesOf(thread!.id)).toEqual([
      { role: 'user', content: question },
      { role: 'agent', content: 'We open at 9 <am> & close at "5".' },
    ]);

    // The model was asked with the agent's model and persona, told it is writing SMS.
    const [request] = llmRequestsFor(question);
    const body = request!.body as { model: string; messages: { role: string; content: string }[] };
    expect(body.model).toBe('gpt-4o-mini');
    expect(body.messages[0]!.role).toBe('system');
    expect(body.messages[0]!.content).toContain('You are Ava, support.');
    expect(body.messages[0]!.content).toContain('SMS conversation');
    expect(body.messages.slice(1)).toEqual([{ role: 'user', content: question }]);
  });

  it('continues the thread: the second message lands in the same conversation and the LLM sees the history', async () => {
    const sender = randomSender();
    const first = unique('I want to book a table');
    const second = unique('For four people please');
    w.openai.addReply({ match: first, reply: 'Sure, for how many people?' });
    w.openai.addReply({ match: second, reply: 'Booked for four.' });
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, first))).body)).toBe('Sure, for how many people?');
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, second))).body)).toBe('Booked for four.');

    const threads = await threadOf('sms', sender);
    expect(threads).toHaveLength(1);
    expect(await messagesOf(threads[0]!.id)).toEqual([
      { role: 'user', content: first },
      { role: 'agent', content: 'Sure, for how many people?' },
      { role: 'user', content: second },
      { role: 'agent', content: 'Booked for four.' },
    ]);
    const [request] = llmRequestsFor(second);
    expect((request!.body as { messages: unknown[] }).messages.slice(1)).toEqual([
      { role: 'user', content: first },
      { role: 'assistant', content: 'Sure, for how many people?' },
      { role: 'user', content: second },
    ]);

    // Another sender to the same number gets a thread of their own.
    const other = randomSender();
    await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, other, unique('hello')));
    expect(await threadOf('sms', other)).toHaveLength(1);
    expect(await threadOf('sms', sender)).toHaveLength(1);
  });

  it('puts messages a new sender sends at the same moment into one thread, each stored once in its own position', async () => {
    const sender = randomSender();
    const texts = [unique('one'), unique('two'), unique('three')];
    const answers = await Promise.all(texts.map((t) => postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, t))));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
    const threads = await threadOf('sms', sender);
    expect(threads).toHaveLength(1);
    const stored = await messagesOf(threads[0]!.id);
    expect(stored).toHaveLength(6);
    expect(stored.filter((m) => m.role === 'user').map((m) => m.content).sort()).toEqual([...texts].sort());
  });

  it('opens a new conversation once the thread was idle for 24 hours and completes the old one', async () => {
    const sender = randomSender();
    await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, unique('first visit')));
    const [old] = await threadOf('sms', sender);
    await w.database.db.execute(sql`update conversation_messages set timestamp = timestamp - interval '25 hours' where conversation_id = ${old!.id}`);
    await w.database.db.execute(sql`update conversations set started_at = started_at - interval '25 hours' where id = ${old!.id}`);
    const later = unique('back again');
    await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, later));
    const threads = await threadOf('sms', sender);
    expect(threads).toHaveLength(2);
    expect(threads[0]!.status).toBe('in_progress');
    expect(await messagesOf(threads[0]!.id)).toEqual([{ role: 'user', content: later }, { role: 'agent', content: `You said: ${later}.` }]);
    const closed = (await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${old!.id}`)).json() as Record<string, unknown>;
    expect(closed).toMatchObject({ status: 'completed', endReason: 'idle_timeout' });
  });

  it('housekeeping completes threads idle for 24 hours without waiting for the next message, but not one being written to', async () => {
    const [idle, busy, fresh] = [randomSender(), randomSender(), randomSender()];
    for (const sender of [idle, busy, fresh]) await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, unique('hello')));
    const [idleThread, busyThread, freshThread] = await Promise.all([idle, busy, fresh].map(async (s) => (await threadOf('sms', s))[0]));
    for (const t of [idleThread!, busyThread!]) {
      await w.database.db.execute(sql`update conversation_messages set timestamp = timestamp - interval '25 hours' where conversation_id = ${t.id}`);
      await w.database.db.execute(sql`update conversations set started_at = started_at - interval '25 hours' where id = ${t.id}`);
    }
    const [lastMessage] = (await w.database.pool.query('select max(timestamp) as at from conversation_messages where conversation_id = $1', [idleThread!.id])).rows as { at: Date }[];
    // The busy thread's peer is writing: its lock (the one openThread takes) is held by another session.
    const holder = await w.database.pool.connect();
    try {
      await holder.query('begin');
      await holder.query(`select pg_advisory_xact_lock(hashtextextended($1, 0))`, [`messaging:${w.tenant.tenantId}:${routed.agentId}:sms:${busy}`]);
      const hk = new Housekeeping({
        idempotency: new IdempotencyStore(w.database.pool),
        rateLimiter: new RateLimiter(w.database.pool),
        messagingThreads: { repo: new MessagingRepository(w.database.db), idleMs: THREAD_IDLE_MS },
        log: pino({ level: 'silent' }),
        intervalMs: 60_000,
      });
      const result = await hk.runOnce();
      await hk.stop();
      expect(result.idleThreads).toBeGreaterThanOrEqual(1);
    } finally {
      await holder.query('rollback');
      holder.release();
    }
    const get = async (id: string) => (await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${id}`)).json() as Record<string, unknown>;
    const closed = await get(idleThread!.id);
    expect(closed).toMatchObject({ status: 'completed', endReason: 'idle_timeout', durationSeconds: expect.any(Number) });
    expect(new Date(closed.endedAt as string).getTime()).toBe(lastMessage!.at.getTime());
    expect((await get(busyThread!.id)).status).toBe('in_progress');
    expect((await get(freshThread!.id)).status).toBe('in_progress');
    // A closed thread can now be deleted (an open one answers 409).
    expect((await call(w.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${idleThread!.id}`)).statusCode).toBe(204);
    expect((await call(w.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${freshThread!.id}`)).statusCode).toBe(409);
    // The next message from the idle sender opens a new thread.
    await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, idle, unique('back')));
    expect((await threadOf('sms', idle)).map((t) => t.status)).toEqual(['in_progress']);
  });

  it('stores a message redelivered with the same MessageSid once and answers the first reply again', async () => {
    const sender = randomSender();
    const text = unique('Is parking free?');
    w.openai.addReply({ match: text, reply: 'Yes, parking is free.' });
    const params = messageParams('sms', routed.phoneNumber, sender, text);
    const first = await postTwilio(w.app, '/webhooks/twilio/sms', params);
    const again = await postTwilio(w.app, '/webhooks/twilio/sms', params);
    expect(twimlMessage(again.body)).toBe('Yes, parking is free.');
    expect(again.body).toBe(first.body);
    const [thread] = await threadOf('sms', sender);
    expect(await messagesOf(thread!.id)).toHaveLength(2);
    expect(llmRequestsFor(text)).toHaveLength(1);
  });

  it('refuses a missing or wrong signature with 403 and stores nothing', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const params = messageParams('sms', routed.phoneNumber, randomSender(), unique('forged'));
    const missing = await postTwilio(w.app, '/webhooks/twilio/sms', params, { signature: null });
    expect(missing.statusCode).toBe(403);
    expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await postTwilio(w.app, '/webhooks/twilio/sms', params, { token: 'another_token_000000000000000000' })).statusCode).toBe(403);
    // A signature of the voice webhook does not open the SMS one, nor does a tampered body.
    expect((await postTwilio(w.app, '/webhooks/twilio/sms', params, { signedUrl: `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/voice` })).statusCode).toBe(403);
    const signature = computeTwilioSignature(TELEPHONY_ENV.TWILIO_AUTH_TOKEN, `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/sms`, params);
    expect((await postTwilio(w.app, '/webhooks/twilio/sms', { ...params, Body: 'changed' }, { signature })).statusCode).toBe(403);
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
    expect(w.openai.requests).toHaveLength(0);
  });

  it('answers an empty <Response/> for an unknown number or a number without an agent, storing nothing', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const unknown = await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', randomE164(), randomSender(), 'hello?'));
    expect(unknown.statusCode).toBe(200);
    expect(twimlMessage(unknown.body)).toBeNull();
    const unassigned = await agentWithNumber(w.app, w.database, w.tenant, { assign: false });
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', unassigned.phoneNumber, randomSender(), 'hello?'))).body)).toBeNull();
    const inactive = await agentWithNumber(w.app, w.database, w.tenant, { status: 'inactive' });
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', inactive.phoneNumber, randomSender(), 'hello?'))).body)).toBeNull();
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
  });

  it('apologises when the LLM fails, keeps the message, and answers a redelivery without storing it twice', async () => {
    const sender = randomSender();
    const text = unique('Can you hear me?');
    w.openai.setFaults({ failNext: { status: 500, count: 1 } });
    const params = messageParams('sms', routed.phoneNumber, sender, text);
    const res = await postTwilio(w.app, '/webhooks/twilio/sms', params);
    expect(res.statusCode).toBe(200);
    expect(twimlMessage(res.body)).toBe(MESSAGING_APOLOGY);
    const [thread] = await threadOf('sms', sender);
    expect(await messagesOf(thread!.id)).toEqual([{ role: 'user', content: text }]);
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/sms', params)).body)).toBe(MESSAGING_APOLOGY);
    expect(await messagesOf(thread!.id)).toHaveLength(1);
  });

  it('answers a message without text (picture, voice note) politely and stores nothing', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const params = messageParams('sms', routed.phoneNumber, randomSender(), '', { NumMedia: '1', MediaUrl0: 'https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1', MediaContentType0: 'image/jpeg' });
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/sms', params)).body)).toBe(TEXT_ONLY_REPLY);
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
    expect(w.openai.requests).toHaveLength(0);
  });

  it('leaves open threads alone when the lost-call watchdog runs (they have no gateway)', async () => {
    const sender = randomSender();
    await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, unique('still there?')));
    const failed = await new ConversationRepository(w.database.db).failStale(new Date(Date.now() + 3_600_000), DEFAULT_LOST_CALL_RULES);
    expect(failed).toEqual([]);
    expect((await threadOf('sms', sender))[0]!.status).toBe('in_progress');
  });
});

describe('POST /webhooks/twilio/whatsapp', () => {
  it('routes whatsapp:+E164 addresses, answers with the LLM reply and stores a whatsapp conversation', async () => {
    const sender = randomSender();
    const question = unique('Do you deliver on Sundays?');
    w.openai.addReply({ match: question, reply: 'Yes, on Sundays too.' });
    const res = await postTwilio(w.app, '/api/v1/webhooks/twilio/whatsapp', messageParams('whatsapp', routed.phoneNumber, sender, question));
    expect(res.statusCode).toBe(200);
    expect(twimlMessage(res.body)).toBe('Yes, on Sundays too.');
    const [thread] = await threadOf('whatsapp', sender);
    expect(thread).toMatchObject({ provider: 'twilio', metadata: { peer: sender, profileName: 'Ana' } });
    const conv = (await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${thread!.id}`)).json() as Record<string, unknown>;
    expect(conv).toMatchObject({ channel: 'whatsapp', direction: 'inbound', caller: { phoneNumber: sender } });
    expect(await messagesOf(thread!.id)).toEqual([
      { role: 'user', content: question },
      { role: 'agent', content: 'Yes, on Sundays too.' },
    ]);
    expect((llmRequestsFor(question)[0]!.body as { messages: { content: string }[] }).messages[0]!.content).toContain('WhatsApp conversation');
    // The same sender over SMS is another thread: channels do not share conversations.
    expect(await threadOf('sms', sender)).toHaveLength(0);
  });

  it('stores a redelivered MessageSid once', async () => {
    const sender = randomSender();
    const params = messageParams('whatsapp', routed.phoneNumber, sender, unique('hola'));
    await postTwilio(w.app, '/webhooks/twilio/whatsapp', params);
    await postTwilio(w.app, '/webhooks/twilio/whatsapp', params);
    const [thread] = await threadOf('whatsapp', sender);
    expect(await messagesOf(thread!.id)).toHaveLength(2);
  });

  it('refuses a missing or wrong signature with 403 and stores nothing', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    const params = messageParams('whatsapp', routed.phoneNumber, randomSender(), unique('forged'));
    expect((await postTwilio(w.app, '/webhooks/twilio/whatsapp', params, { signature: null })).statusCode).toBe(403);
    expect((await postTwilio(w.app, '/webhooks/twilio/whatsapp', params, { token: 'another_token_000000000000000000' })).statusCode).toBe(403);
    // Signed for the SMS URL: not valid for the WhatsApp one.
    expect((await postTwilio(w.app, '/webhooks/twilio/whatsapp', params, { signedUrl: `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/sms` })).statusCode).toBe(403);
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
  });

  it('answers an empty <Response/> to an address without the whatsapp: prefix or to an unknown number', async () => {
    const before = await storedCounts(w.database, w.tenant.tenantId);
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/whatsapp', messageParams('sms', routed.phoneNumber, randomSender(), 'hi'))).body)).toBeNull();
    expect(twimlMessage((await postTwilio(w.app, '/webhooks/twilio/whatsapp', messageParams('whatsapp', randomE164(), randomSender(), 'hi'))).body)).toBeNull();
    expect(await storedCounts(w.database, w.tenant.tenantId)).toEqual(before);
  });
});

describe('a message that comes as its thread turns idle', () => {
  it('opens a new thread when the idle sweep closes the old one between openThread and the insert, and stores the message there once', async () => {
    const sender = randomSender();
    const first = unique('Hello there');
    w.openai.addReply({ match: first, reply: 'Hi.' });
    expect((await postTwilio(w.app, '/webhooks/twilio/sms', messageParams('sms', routed.phoneNumber, sender, first))).statusCode).toBe(200);
    const [old] = await threadOf('sms', sender);
    // The sweep runs right after openThread's transaction (and its lock) ends, once.
    const repo = new MessagingRepository(w.database.db);
    let swept = 0;
    const racing = Object.assign(Object.create(repo) as MessagingRepository, {
      openThread: async (...args: Parameters<MessagingRepository['openThread']>) => {
        const opened = await repo.openThread(...args);
        if (swept++ === 0) await w.database.db.execute(sql`update conversations set status = 'completed', end_reason = 'idle_timeout', ended_at = now() where id = ${opened.row.id}`);
        return opened;
      },
    });
    const service = new MessagingService({
      conversations: new ConversationRepository(w.database.db),
      threads: racing,
      idempotency: new IdempotencyStore(w.database.pool),
      llms: () => Promise.reject(new Error('not used by receive')),
      log: pino({ level: 'silent' }),
    });
    const text = unique('Are you still there?');
    const receipt = await service.receive({ channel: 'sms', provider: 'twilio', tenantId: w.tenant.tenantId, agentId: routed.agentId, peer: sender, messageId: `SM${randomBytes(16).toString('hex')}`, text, from: sender, to: routed.phoneNumber, metadata: {} });
    expect(receipt.kind).toBe('accepted');
    expect(swept).toBe(2);
    const threads = await threadOf('sms', sender);
    expect(threads.map((c) => c.status).sort()).toEqual(['completed', 'in_progress']);
    const fresh = threads.find((c) => c.status === 'in_progress')!;
    expect(fresh.id).not.toBe(old!.id);
    expect(receipt.kind === 'accepted' && receipt.pending.conversation.id).toBe(fresh.id);
    expect(await messagesOf(fresh.id)).toEqual([{ role: 'user', content: text }]);
    expect((await messagesOf(old!.id)).map((m) => m.content)).toEqual([first, 'Hi.']);
  });
});
