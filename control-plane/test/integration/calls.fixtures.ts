/**
 * What the call tests share: a control plane's call handling on a test app, an active
 * agent, gateway-side messages built the way a gateway sends them, and a recorder of
 * platform events. Each test file still owns its tenants and data.
 *
 * Time: the watchdog's rules are global over the shared test database, so tests never
 * move its clock into the future (that would fail other files' live calls). They date
 * calls and heartbeats in the past instead and run the watchdog at the real time.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { SUBJECTS, newId } from '@vap/shared';
import type { Bus, BusMessage, Payload, RequestPayload } from '@vap/shared';
import type { Db } from '../../src/db/database.js';
import { startCallHandling } from '../../src/modules/conversations/call-handlers.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

export type PlatformEvent = Payload<'platformEvent'>;
export type SessionMessage = Payload<'sessionMessage'>['message'];
export type TranscriptTurn = NonNullable<Payload<'sessionMessage'>['turn']>;

/** A control plane's call handling without the watchdog timer (tests run passes themselves). */
export function startCalls(db: Db, bus: Bus, opts: { now?: () => number; watchdog?: { intervalMs?: number } | false; heartbeatsSeenSince?: number } = {}): CallHandling {
  return startCallHandling({
    db,
    bus,
    secrets: new SecretBox(TEST_SECRET_KEY),
    log: pino({ level: 'silent' }),
    watchdog: opts.watchdog ?? false,
    heartbeatSettleMs: 0,
    // The tests date heartbeats and calls in the past, before this control plane "started".
    heartbeatsSeenSince: opts.heartbeatsSeenSince ?? 0,
    ...(opts.now ? { now: opts.now } : {}),
  });
}

/** Creates an agent through the API and activates it. */
/** What the conversation read-route tests share: an app, two tenants, an active agent, call handling. */
export interface ConversationsWorld {
  t: TestApp;
  tenant: TestTenant;
  other: TestTenant;
  agent: { id: string; name: string; version: number };
  calls: CallHandling;
}

/** Registers the set-up and tear-down of a {@link ConversationsWorld} for the calling test file. */
export function conversationsWorld(): ConversationsWorld {
  const w = {} as ConversationsWorld;
  beforeAll(async () => {
    w.t = await createTestApp();
    w.tenant = await createTenant(w.t.database);
    w.other = await createTenant(w.t.database);
    w.agent = await activeAgent(w.t.app, w.tenant.key);
    w.calls = startCalls(w.t.database.db, w.t.bus);
  });
  afterAll(async () => {
    await w.calls.close();
    await w.t.close();
  });
  return w;
}

export async function activeAgent(app: FastifyInstance, key: string, overrides: Record<string, unknown> = {}): Promise<{ id: string; name: string; version: number }> {
  const agent = await createAgentFor(app, key, overrides);
  const res = await call(app, key, 'POST', `/api/v1/agents/${agent.id}/activate`);
  expect(res.statusCode).toBe(200);
  return res.json();
}

export function prepareRequest(tenantId: string, agentId: string, overrides: Partial<RequestPayload<'callPrepare'>> = {}): RequestPayload<'callPrepare'> {
  return {
    provider: 'twilio',
    channel: 'phone',
    direction: 'inbound',
    callSid: `CA${randomBytes(16).toString('hex')}`,
    tenantId,
    agentId,
    from: '+14155550123',
    to: '+442071838750',
    metadata: { campaign: 'spring' },
    gatewayId: newId('gw'),
    ...overrides,
  };
}

/** Asks for a call as a gateway does and returns the accepted reply. */
export async function prepareCall(bus: Bus, req: RequestPayload<'callPrepare'>) {
  const reply = await bus.request('callPrepare', req, { timeoutMs: 5000 });
  if (!reply.ok) throw new Error(`call.prepare refused: ${reply.code}`);
  return reply;
}

export function message(seq: number, overrides: Partial<SessionMessage> = {}): SessionMessage {
  const role = seq % 2 === 0 ? 'agent' : 'user';
  return {
    id: newId('msg'),
    seq,
    role,
    content: role === 'agent' ? `Agent line ${seq}` : `User line ${seq}`,
    timestamp: new Date(Date.UTC(2026, 0, 1, 12, 0, seq)).toISOString(),
    durationMs: 1000 + seq,
    interrupted: false,
    source: role === 'agent' ? 'llm' : 'speech',
    ...overrides,
  };
}

export function turnFor(m: SessionMessage): TranscriptTurn {
  return {
    id: newId('turn'),
    seq: m.seq,
    speaker: m.role,
    text: m.content,
    startTime: m.seq * 2,
    endTime: m.seq * 2 + 1.5,
    confidence: 0.93,
    words: m.content.split(' ').map((word, i) => ({ word, startTime: m.seq * 2 + i * 0.3, endTime: m.seq * 2 + i * 0.3 + 0.25, confidence: 0.9 })),
  };
}

export function endedRecord(tenantId: string, agentId: string, conversationId: string, messages: SessionMessage[], overrides: Partial<Payload<'sessionEnded'>> = {}): Payload<'sessionEnded'> {
  return {
    conversationId,
    tenantId,
    agentId,
    status: 'completed',
    endReason: 'user_ended',
    endedAt: new Date(Date.UTC(2026, 0, 1, 12, 1, 35)).toISOString(),
    durationSeconds: 95,
    language: 'en-US',
    messages,
    turns: messages.map(turnFor),
    usage: {
      llm: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 12_000, outputTokens: 3_000 },
      tts: { provider: 'elevenlabs', characters: 1_500 },
      stt: { provider: 'deepgram', audioSeconds: 95 },
      telephony: { provider: 'twilio', seconds: 95 },
    },
    error: null,
    recording: null,
    turnMetrics: [],
    ...overrides,
  };
}

export async function publishMessage(bus: Bus, tenantId: string, conversationId: string, m: SessionMessage, turn: TranscriptTurn | null = turnFor(m)): Promise<void> {
  await bus.publish('sessionMessage', SUBJECTS.sessionMessage.subject(tenantId, conversationId), { tenantId, conversationId, message: m, turn });
}

export async function publishEnded(bus: Bus, rec: Payload<'sessionEnded'>): Promise<void> {
  await bus.publish('sessionEnded', SUBJECTS.sessionEnded.subject(rec.tenantId, rec.conversationId), rec);
}

/** A gateway's heartbeat; `draining` left out unless given, as gateways of earlier versions send it. */
export async function publishHeartbeat(bus: Bus, gatewayId: string, activeConversationIds: string[], intervalMs = 1000, draining?: boolean): Promise<void> {
  await bus.publish('gatewayHeartbeat', SUBJECTS.gatewayHeartbeat.subject(gatewayId), { gatewayId, activeConversationIds, intervalMs, at: new Date().toISOString(), ...(draining === undefined ? {} : { draining }) });
}

/** Records every platform event of one tenant. */
export function recordEvents(bus: Bus, tenantId: string): { events: PlatformEvent[]; of(conversationId: string, type?: PlatformEvent['type']): PlatformEvent[]; close(): Promise<void> } {
  const events: PlatformEvent[] = [];
  const sub = bus.subscribe('platformEvent', `event.${tenantId}.>`, (m: BusMessage<'platformEvent'>) => void events.push(m.payload));
  return {
    events,
    of: (conversationId, type) => events.filter((e) => e.data.conversationId === conversationId && (type === undefined || e.type === type)),
    close: () => sub.close(),
  };
}

/** A conversation row as Postgres returns it (snake_case). */
export type ConversationDbRow = Record<string, unknown> & { id: string; status: string };

/** Polls a conversation row until `check` passes (handlers run after `publish` returns). */
export async function waitForRow(pool: pg.Pool, conversationId: string, check: (row: ConversationDbRow) => void): Promise<ConversationDbRow> {
  return vi.waitFor(
    async () => {
      const { rows } = await pool.query<ConversationDbRow>('select * from conversations where id = $1', [conversationId]);
      expect(rows).toHaveLength(1);
      check(rows[0]!);
      return rows[0]!;
    },
    { timeout: 5000, interval: 20 },
  );
}

/**
 * A call through the real handlers: prepared over the bus, then (unless `ended: false`)
 * ended with `record` applied directly, so the caller need not wait for delivery.
 */
export async function seedCall(
  bus: Bus,
  handling: CallHandling,
  tenantId: string,
  agentId: string,
  opts: { ended?: boolean; messages?: SessionMessage[]; record?: Partial<Payload<'sessionEnded'>>; request?: Partial<RequestPayload<'callPrepare'>> } = {},
): Promise<{ conversationId: string; record: Payload<'sessionEnded'> | null }> {
  const { conversationId } = await prepareCall(bus, prepareRequest(tenantId, agentId, opts.request));
  if (opts.ended === false) return { conversationId, record: null };
  const record = endedRecord(tenantId, agentId, conversationId, opts.messages ?? [message(0), message(1)], opts.record);
  await handling.calls.end(record);
  return { conversationId, record };
}
