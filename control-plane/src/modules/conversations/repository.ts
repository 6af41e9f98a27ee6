import { and, arrayContains, asc, desc, eq, gte, isNotNull, lt, lte, notInArray, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import type { z } from 'zod';
import type { sessionMessageSchema, transcriptTurnSchema } from '@vap/shared';
import { poolOf } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { PreparedPages } from '../../db/page-query.js';
import type { ListSpec } from '../../db/page-query.js';
import { ShapedStatements } from '../../db/shaped-statements.js';
import { agentVersions } from '../../db/schema/agent-versions.js';
import { agents } from '../../db/schema/agents.js';
import { conversationMessages, conversations, gatewayHeartbeats, transcriptTurns } from '../../db/schema/conversations.js';
import { jobs } from '../../db/schema/jobs.js';
import { carrierCallEvents } from '../../db/schema/carrier-call-events.js';
import type { CarrierCallEventProvider } from '../../db/schema/carrier-call-events.js';
import { tenants } from '../../db/schema/tenants.js';
import { deletedConversationUsage } from '../../db/schema/usage.js';
import { webhookEvents } from '../../db/schema/webhooks.js';
import { dateRange } from './schemas.js';
import type { ListConversationsQuery } from './schemas.js';

export type ConversationRow = typeof conversations.$inferSelect;
export type NewConversation = typeof conversations.$inferInsert;
export type MessageRow = typeof conversationMessages.$inferSelect;
export type TurnRow = typeof transcriptTurns.$inferSelect;
export type AgentRow = typeof agents.$inferSelect;
export type SessionMessage = z.infer<typeof sessionMessageSchema>;
export type TranscriptTurn = z.infer<typeof transcriptTurnSchema>;

/** End reason and error code the control plane writes when a gateway disappears with a call. */
export const GATEWAY_LOST = 'gateway_lost';
const GATEWAY_LOST_ERROR = { code: GATEWAY_LOST, message: 'The media gateway carrying this call stopped responding' };

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

type ListFilters = Partial<Omit<ListConversationsQuery, 'page' | 'pageSize' | 'sortBy' | 'sortOrder'>>;

/** Each list filter's condition, with a placeholder (of the filter's name) for its value. */
const FILTER_CONDITIONS = {
  tenantId: () => eq(conversations.tenantId, sql.placeholder('tenantId')),
  agentId: () => eq(conversations.agentId, sql.placeholder('agentId')),
  channel: () => eq(conversations.channel, sql.placeholder('channel')),
  status: () => eq(conversations.status, sql.placeholder('status')),
  direction: () => eq(conversations.direction, sql.placeholder('direction')),
  from: () => gte(conversations.startedAt, sql.placeholder('from')),
  to: () => lte(conversations.startedAt, sql.placeholder('to')),
  outcome: () => eq(conversations.outcome, sql.placeholder('outcome')),
  tags: () => arrayContains(conversations.tags, sql.placeholder('tags')),
  minDuration: () => gte(conversations.durationSeconds, sql.placeholder('minDuration')),
} satisfies Record<string, () => SQL>;

type FilterName = keyof typeof FILTER_CONDITIONS;

/**
 * The list's filters as the values of the conditions they need; agent statistics use the
 * same, so both agree. `key` names the shape (which filters are given), `where()` builds its
 * condition with placeholders (see `ShapedStatements`, `PreparedPages`).
 */
function listFilter(tenantId: string, q: ListFilters): { key: string; values: Partial<Record<FilterName, unknown>>; where: () => SQL | undefined } {
  const { from, to } = dateRange(q.dateFrom, q.dateTo);
  const values: Partial<Record<FilterName, unknown>> = { tenantId };
  if (q.agentId) values.agentId = q.agentId;
  if (q.channel) values.channel = q.channel;
  if (q.status) values.status = q.status;
  if (q.direction) values.direction = q.direction;
  if (from) values.from = from.toISOString();
  if (to) values.to = to.toISOString();
  if (q.outcome) values.outcome = q.outcome;
  if (q.tags && q.tags.length > 0) values.tags = q.tags;
  if (q.minDuration !== undefined) values.minDuration = q.minDuration;
  const names = Object.keys(values) as FilterName[];
  return { key: names.join(','), values, where: () => and(...names.map((n) => FILTER_CONDITIONS[n]())) };
}

/** The list's statement: the conversations `where` selects, in the order `q` asks for. */
function listSpec(where: SQL | undefined, q: Pick<ListConversationsQuery, 'sortBy' | 'sortOrder'>): ListSpec {
  const c = conversations;
  const dir = q.sortOrder === 'asc' ? asc : desc;
  // Unpriced and in-progress rows sort last either way.
  const order = q.sortBy === 'durationSeconds' ? [sql`${c.durationSeconds} ${sql.raw(q.sortOrder)} nulls last`] : q.sortBy === 'cost' ? [sql`${c.costTotalUsd} ${sql.raw(q.sortOrder)} nulls last`] : [dir(c.startedAt)];
  return { where, orderBy: [...order, dir(c.id)] };
}

/** Agent statistics as computed in SQL (see `ConversationRepository.agentStats`). */
export interface AgentStatsRow {
  total: number;
  totalDurationSeconds: number;
  avgDurationSeconds: number | null;
  totalCostUsd: number;
  avgCostUsd: number | null;
  avgSentimentScore: number | null;
  byChannel: Record<string, number> | null;
  byOutcome: Record<string, number> | null;
}

export type DeleteResult = { kind: 'deleted'; recordingKey: string | null } | { kind: 'not-found' } | { kind: 'in-progress' };

/** Work done inside a state change's transaction, with the rows it wrote (the event outbox). */
export type InTransaction<T> = (tx: Tx, rows: T) => Promise<void>;

/** What a gateway's end record writes onto the conversation row. */
export type FinalWrite = Pick<NewConversation, 'status' | 'endReason' | 'endedAt' | 'durationSeconds' | 'language' | 'costs' | 'costTotalUsd' | 'error' | 'recording' | 'recordingKey' | 'recordingExpiresAt' | 'turnMetrics'>;

export type FinishResult =
  | { kind: 'unknown' }
  /** Already finished by an earlier copy of the same record: nothing written. */
  | { kind: 'duplicate'; row: ConversationRow }
  | { kind: 'finished'; row: ConversationRow; previous: ConversationRow };

/**
 * A conversation the watchdog failed: `failed` + `gateway_lost` and no costs (the gateway
 * never reported usage). The gateway's own end record may still overwrite it.
 */
export function isLostRecord(row: ConversationRow): boolean {
  return row.status === 'failed' && row.endReason === GATEWAY_LOST && row.costs === null;
}

function messageValues(conversationId: string, m: SessionMessage) {
  return {
    id: m.id,
    conversationId,
    seq: m.seq,
    role: m.role,
    content: m.content,
    source: m.source,
    interrupted: m.interrupted,
    durationMs: m.durationMs,
    timestamp: new Date(m.timestamp),
  };
}

function turnValues(conversationId: string, t: TranscriptTurn) {
  return { id: t.id, conversationId, seq: t.seq, speaker: t.speaker, text: t.text, startTime: t.startTime, endTime: t.endTime, confidence: t.confidence, words: t.words };
}

/** Keeps the last of several entries with one id (a record must not insert a row twice). */
function lastById<T extends { id: string }>(items: T[]): T[] {
  return [...new Map(items.map((i) => [i.id, i])).values()];
}

/** The columns a lost call gets, at `now` (duration counted from `started_at`). */
function lostSet(now: Date) {
  const at = now.toISOString();
  return {
    status: 'failed' as const,
    endReason: GATEWAY_LOST,
    endedAt: now,
    durationSeconds: sql<number>`greatest(0, floor(extract(epoch from (${at}::timestamptz - ${conversations.startedAt}))))::int`,
    error: GATEWAY_LOST_ERROR,
    updatedAt: now,
  };
}

/**
 * Conversations and what the voice loop writes into them. Reads are scoped by tenant;
 * writes from the bus are keyed by conversation id and checked against the tenant the
 * gateway named.
 */
export class ConversationRepository {
  /** The list's statements, one per shape of filters and sort. */
  private readonly pages: PreparedPages<typeof conversations>;
  /** The statistics statement, one per shape of filters. */
  private readonly statements: ShapedStatements;

  constructor(private readonly db: Db) {
    this.pages = new PreparedPages(db, conversations);
    this.statements = new ShapedStatements(poolOf(db));
  }

  /** Runs SQL outside any transaction (an event with no state change to join). */
  get executor(): Pick<Db, 'execute'> {
    return this.db;
  }

  /** The agent a call asks for, with its tenant's status. */
  async agentForCall(tenantId: string, agentId: string): Promise<{ agent: AgentRow; tenantStatus: string } | undefined> {
    const [row] = await this.db
      .select({ agent: agents, tenantStatus: tenants.status })
      .from(agents)
      .innerJoin(tenants, eq(tenants.id, agents.tenantId))
      .where(and(eq(agents.tenantId, tenantId), eq(agents.id, agentId)));
    return row;
  }

  /**
   * Inserts the conversation of a call unless one exists for the same provider call id
   * (a retried `call.prepare`); `created` says which. Concurrent retries are safe: the
   * unique index on (provider, external_id) lets exactly one insert win.
   */
  async createOrGet(values: NewConversation, onCreated?: InTransaction<ConversationRow>): Promise<{ row: ConversationRow; created: boolean }> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .insert(conversations)
        .values(values)
        .onConflictDoNothing({ target: [conversations.provider, conversations.externalId] })
        .returning();
      if (row) {
        await onCreated?.(tx, row);
        return { row, created: true };
      }
      const [existing] = await tx
        .select()
        .from(conversations)
        .where(and(eq(conversations.provider, values.provider), eq(conversations.externalId, values.externalId)));
      if (!existing) throw new Error('conversation vanished between insert and read');
      return { row: existing, created: false };
    });
  }

  async find(tenantId: string, id: string): Promise<ConversationRow | undefined> {
    const [row] = await this.db
      .select()
      .from(conversations)
      .where(and(eq(conversations.tenantId, tenantId), eq(conversations.id, id)));
    return row;
  }

  /** One page of a tenant's conversations matching the list filters, with the total. */
  async list(tenantId: string, q: ListConversationsQuery): Promise<{ rows: ConversationRow[]; total: number }> {
    const filter = listFilter(tenantId, q);
    return this.pages.page(`${filter.key}|${q.sortBy}|${q.sortOrder}`, () => listSpec(filter.where(), q), filter.values, q);
  }

  /**
   * Statistics of one agent's conversations started in `[dateFrom, dateTo]`, in one
   * statement over the same rows the list returns for those filters; undefined when the
   * tenant has no such agent (checked in the same statement: one round trip).
   */
  async agentStats(tenantId: string, agentId: string, range: { dateFrom?: string; dateTo?: string }): Promise<AgentStatsRow | undefined> {
    const filter = listFilter(tenantId, { agentId, ...range });
    const result = await this.statements.query<{
      agent_found: boolean;
      total: number;
      total_duration: string | null;
      avg_duration: string | null;
      total_cost: string | null;
      avg_cost: string | null;
      avg_sentiment: string | null;
      by_channel: Record<string, number> | null;
      by_outcome: Record<string, number> | null;
    }>(`stats|${filter.key}`, () => this.agentStatsStatement(filter.where()), filter.values);
    const r = result.rows[0]!;
    if (!r.agent_found) return undefined;
    const num = (v: string | null) => (v === null ? null : Number(v));
    return {
      total: r.total,
      totalDurationSeconds: num(r.total_duration) ?? 0,
      avgDurationSeconds: num(r.avg_duration),
      totalCostUsd: num(r.total_cost) ?? 0,
      avgCostUsd: num(r.avg_cost),
      avgSentimentScore: num(r.avg_sentiment),
      byChannel: r.by_channel,
      byOutcome: r.by_outcome,
    };
  }

  /** The statistics statement over the conversations `where` selects (placeholders `tenantId`, `agentId`). */
  private agentStatsStatement(where: SQL | undefined): SQL {
    const c = conversations;
    const filtered = this.db
      .select({ channel: c.channel, outcome: c.outcome, durationSeconds: c.durationSeconds, costTotalUsd: c.costTotalUsd, analysis: c.analysis })
      .from(c)
      .where(where)
      .as('f');
    return sql`
      with f as (select * from ${filtered})
      select
        exists (select 1 from ${agents} where ${agents.tenantId} = ${sql.placeholder('tenantId')} and ${agents.id} = ${sql.placeholder('agentId')}) as agent_found,
        (select count(*)::int from f) as total,
        (select sum(duration_seconds) from f) as total_duration,
        (select avg(duration_seconds) from f) as avg_duration,
        (select sum(cost_total_usd) from f) as total_cost,
        (select avg(cost_total_usd) from f) as avg_cost,
        (select avg((analysis->>'sentimentScore')::numeric) from f where jsonb_typeof(analysis->'sentimentScore') = 'number') as avg_sentiment,
        (select jsonb_object_agg(channel, n) from (select channel, count(*)::int as n from f group by channel) x) as by_channel,
        (select jsonb_object_agg(outcome, n) from (select outcome, count(*)::int as n from f where outcome is not null group by outcome) y) as by_outcome
    `;
  }

  /**
   * Deletes a conversation for good, in one transaction: its billing usage is added to the
   * anonymous aggregate (tenant, agent, UTC day, channel), then its webhook events (their
   * bodies carry its data), pending jobs, the carrier's call events, messages, transcript
   * and the row itself go.
   * `removeRecording` runs inside the transaction, before commit: if the object store
   * fails, nothing is deleted; if the commit fails after it, a retried DELETE finishes.
   * A call still in progress is not deleted (its gateway would keep reporting it).
   */
  async deleteConversation(tenantId: string, id: string, removeRecording: (key: string) => Promise<void>): Promise<DeleteResult> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ status: conversations.status, recordingKey: conversations.recordingKey, provider: conversations.provider, externalId: conversations.externalId })
        .from(conversations)
        .where(and(eq(conversations.tenantId, tenantId), eq(conversations.id, id)))
        .for('update');
      if (!row) return { kind: 'not-found' as const };
      if (row.status === 'in_progress') return { kind: 'in-progress' as const };
      await tx.execute(sql`
        insert into ${deletedConversationUsage} as d
          (tenant_id, agent_id, day, channel, conversations, duration_seconds, llm_input_tokens, llm_output_tokens, tts_characters,
           stt_audio_seconds, telephony_minutes, llm_usd, tts_usd, stt_usd, telephony_usd, total_usd)
        select tenant_id, agent_id, (started_at at time zone 'UTC')::date, channel, 1, coalesce(duration_seconds, 0),
               coalesce((costs->'llm'->>'inputTokens')::bigint, 0), coalesce((costs->'llm'->>'outputTokens')::bigint, 0),
               coalesce((costs->'tts'->>'characters')::bigint, 0), coalesce((costs->'stt'->>'audioSeconds')::numeric, 0),
               coalesce((costs->'telephony'->>'minutes')::numeric, 0), coalesce((costs->'llm'->>'cost')::numeric, 0),
               coalesce((costs->'tts'->>'cost')::numeric, 0), coalesce((costs->'stt'->>'cost')::numeric, 0),
               coalesce((costs->'telephony'->>'cost')::numeric, 0), coalesce(cost_total_usd, 0)
          from ${conversations} where id = ${id}
        on conflict (tenant_id, agent_id, day, channel) do update set
          conversations = d.conversations + excluded.conversations,
          duration_seconds = d.duration_seconds + excluded.duration_seconds,
          llm_input_tokens = d.llm_input_tokens + excluded.llm_input_tokens,
          llm_output_tokens = d.llm_output_tokens + excluded.llm_output_tokens,
          tts_characters = d.tts_characters + excluded.tts_characters,
          stt_audio_seconds = d.stt_audio_seconds + excluded.stt_audio_seconds,
          telephony_minutes = d.telephony_minutes + excluded.telephony_minutes,
          llm_usd = d.llm_usd + excluded.llm_usd,
          tts_usd = d.tts_usd + excluded.tts_usd,
          stt_usd = d.stt_usd + excluded.stt_usd,
          telephony_usd = d.telephony_usd + excluded.telephony_usd,
          total_usd = d.total_usd + excluded.total_usd
      `);
      await tx.delete(webhookEvents).where(and(eq(webhookEvents.tenantId, tenantId), eq(webhookEvents.conversationId, id)));
      await tx.delete(jobs).where(and(eq(jobs.tenantId, tenantId), eq(jobs.subjectId, id)));
      // The carrier's status events of the call, also those that arrived before the conversation
      // existed (no conversation_id; the foreign key's cascade removes the others anyway).
      await tx.delete(carrierCallEvents).where(and(eq(carrierCallEvents.provider, row.provider as CarrierCallEventProvider), eq(carrierCallEvents.callSid, row.externalId)));
      await tx.delete(conversations).where(eq(conversations.id, id));
      if (row.recordingKey) await removeRecording(row.recordingKey);
      return { kind: 'deleted' as const, recordingKey: row.recordingKey };
    });
  }

  /** Adds tags (kept in first-seen order, without repeats); undefined when not found, 'too-many' past `max`. */
  async addTags(tenantId: string, id: string, tags: string[], max: number): Promise<string[] | 'too-many' | undefined> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ tags: conversations.tags })
        .from(conversations)
        .where(and(eq(conversations.tenantId, tenantId), eq(conversations.id, id)))
        .for('update');
      if (!row) return undefined;
      const merged = [...new Set([...row.tags, ...tags])];
      if (merged.length > max) return 'too-many';
      await tx.update(conversations).set({ tags: merged, updatedAt: sql`now()` }).where(eq(conversations.id, id));
      return merged;
    });
  }

  async setOutcome(tenantId: string, id: string, outcome: string, notes: string | null): Promise<ConversationRow | undefined> {
    const [row] = await this.db
      .update(conversations)
      .set({ outcome, outcomeNotes: notes, updatedAt: sql`now()` })
      .where(and(eq(conversations.tenantId, tenantId), eq(conversations.id, id)))
      .returning();
    return row;
  }

  async messages(conversationId: string): Promise<MessageRow[]> {
    return this.db.select().from(conversationMessages).where(eq(conversationMessages.conversationId, conversationId)).orderBy(asc(conversationMessages.seq));
  }

  async turns(conversationId: string): Promise<TurnRow[]> {
    return this.db.select().from(transcriptTurns).where(eq(transcriptTurns.conversationId, conversationId)).orderBy(asc(transcriptTurns.seq));
  }

  /**
   * Stores one live message (and its transcript turn) while the call is in progress.
   * A message re-sent with the same id replaces the stored one, except that an
   * interrupted (truncated) version is never replaced by an uninterrupted one, whatever
   * order they arrive in; the turn is written with its message, keyed by position. Once the call has ended, the end record is the truth and live
   * messages are ignored (`closed`). The share lock orders this against `finish`.
   */
  async recordMessage(tenantId: string, conversationId: string, message: SessionMessage, turn: TranscriptTurn | null): Promise<'stored' | 'unknown' | 'closed'> {
    return this.db.transaction(async (tx) => {
      const [conv] = await tx
        .select({ status: conversations.status })
        .from(conversations)
        .where(and(eq(conversations.id, conversationId), eq(conversations.tenantId, tenantId)))
        .for('share');
      if (!conv) return 'unknown';
      if (conv.status !== 'in_progress') return 'closed';
      const m = conversationMessages;
      const written = await tx
        .insert(m)
        .values(messageValues(conversationId, message))
        .onConflictDoUpdate({
          target: m.id,
          set: { content: sql`excluded.content`, interrupted: sql`excluded.interrupted`, durationMs: sql`excluded.duration_ms` },
          setWhere: sql`${m.conversationId} = excluded.conversation_id and (not ${m.interrupted} or excluded.interrupted)`,
        })
        .returning({ id: m.id });
      // The turn follows its message: a stale version skipped above leaves the turn alone too.
      // It is keyed by position, so a re-sent message whose turn got a new id replaces the old turn.
      if (turn && written.length > 0) {
        const t = transcriptTurns;
        await tx
          .insert(t)
          .values(turnValues(conversationId, turn))
          .onConflictDoUpdate({
            target: [t.conversationId, t.seq],
            set: { id: sql`excluded.id`, speaker: sql`excluded.speaker`, text: sql`excluded.text`, startTime: sql`excluded.start_time`, endTime: sql`excluded.end_time`, confidence: sql`excluded.confidence`, words: sql`excluded.words` },
          });
      }
      return 'stored';
    });
  }

  /**
   * Applies a gateway's end record in one transaction: locks the conversation, lets
   * `decide` price it (it gets the row and the agent's transcription model at the call's
   * version) and return the final columns, replaces every message and turn with the
   * record's (the record is complete, so the stored result is the same whatever order
   * live messages came in), and writes the row. A conversation that already ended
   * (anything but in progress or lost) is a duplicate record: nothing is written.
   */
  async finish(
    tenantId: string,
    conversationId: string,
    record: { messages: SessionMessage[]; turns: TranscriptTurn[] },
    decide: (row: ConversationRow, transcriptionModel: string | undefined) => FinalWrite,
    onFinished?: InTransaction<ConversationRow>,
  ): Promise<FinishResult> {
    return this.db.transaction(async (tx) => {
      const [conv] = await tx
        .select()
        .from(conversations)
        .where(and(eq(conversations.id, conversationId), eq(conversations.tenantId, tenantId)))
        .for('update');
      if (!conv) return { kind: 'unknown' as const };
      if (conv.status !== 'in_progress' && !isLostRecord(conv)) return { kind: 'duplicate' as const, row: conv };
      const write = decide(conv, await this.transcriptionModel(tx, conv));
      await tx.delete(conversationMessages).where(eq(conversationMessages.conversationId, conversationId));
      await tx.delete(transcriptTurns).where(eq(transcriptTurns.conversationId, conversationId));
      const messages = lastById(record.messages).map((m) => messageValues(conversationId, m));
      const turns = lastById(record.turns).map((t) => turnValues(conversationId, t));
      if (messages.length > 0) await tx.insert(conversationMessages).values(messages);
      if (turns.length > 0) await tx.insert(transcriptTurns).values(turns);
      const [row] = await tx
        .update(conversations)
        .set({ ...write, updatedAt: sql`now()` })
        .where(eq(conversations.id, conversationId))
        .returning();
      await onFinished?.(tx, row!);
      return { kind: 'finished' as const, row: row!, previous: conv };
    });
  }

  /**
   * Records a gateway's heartbeat at `now`, and whether it drains (takes no new call). A gateway
   * that drained stays draining: it never takes calls again (a new process has a new id), and
   * a beat sent before the drain's own, stored after it (another handler, another control
   * plane), must not undo it.
   */
  async heartbeat(gatewayId: string, intervalMs: number, now: Date, draining = false): Promise<void> {
    await this.db
      .insert(gatewayHeartbeats)
      .values({ gatewayId, intervalMs, lastSeenAt: now, draining })
      .onConflictDoUpdate({ target: gatewayHeartbeats.gatewayId, set: { intervalMs, lastSeenAt: now, draining: sql`${gatewayHeartbeats.draining} or excluded.draining` } });
  }

  /** Deletes the heartbeat rows of gateways last heard from before `before` (gone long since). */
  async pruneHeartbeats(before: Date): Promise<void> {
    await this.db.delete(gatewayHeartbeats).where(lt(gatewayHeartbeats.lastSeenAt, before));
  }

  /**
   * Fails the in-progress calls of a gateway that its heartbeat no longer lists, neither among
   * its conversations nor among the calls it is still preparing (by provider and carrier call
   * id: it has not heard their conversation's id yet), if they started before `startedBefore`
   * (younger calls may not have reached the list yet).
   * `status = 'in_progress'` in the UPDATE makes it safe for every control plane to run.
   */
  async failMissing(
    gatewayId: string,
    listed: { conversationIds: string[]; preparing: { provider: string; callSid: string }[] },
    startedBefore: Date,
    now: Date,
    onFailed?: InTransaction<ConversationRow[]>,
  ): Promise<ConversationRow[]> {
    const where: SQL[] = [eq(conversations.status, 'in_progress'), eq(conversations.gatewayId, gatewayId), lt(conversations.startedAt, startedBefore)];
    if (listed.conversationIds.length > 0) where.push(notInArray(conversations.id, listed.conversationIds));
    if (listed.preparing.length > 0) {
      const pairs = sql.join(listed.preparing.map((c) => sql`(${c.provider}, ${c.callSid})`), sql`, `);
      // coalesce: a row without a carrier call id is not among them (NOT IN would be null for it).
      where.push(sql`not coalesce((${conversations.provider}, ${conversations.externalId}) in (${pairs}), false)`);
    }
    return this.db.transaction(async (tx) => {
      const rows = await tx
        .update(conversations)
        .set(lostSet(now))
        .where(and(...where))
        .returning();
      if (rows.length > 0) await onFailed?.(tx, rows);
      return rows;
    });
  }

  /**
   * Fails in-progress calls whose gateway's last heartbeat is older than `staleFactor`
   * of its interval, or whose gateway never sent one and that started more than
   * `neverSeenGraceMs` ago. Each conversation is failed once however many control planes
   * run this at the same moment: the UPDATE re-checks `status` under the row lock.
   */
  async failStale(now: Date, opts: { staleFactor: number; neverSeenGraceMs: number; seenSince?: Date }, onFailed?: InTransaction<ConversationRow[]>): Promise<ConversationRow[]> {
    const at = now.toISOString();
    // The caller saw every heartbeat from `seenSince` on: silence before it proves nothing.
    const seenSince = (opts.seenSince ?? new Date(0)).toISOString();
    const c = conversations;
    return this.db.transaction(async (tx) => {
      const rows = await tx
        .update(c)
        .set(lostSet(now))
        .where(
          and(
            eq(c.status, 'in_progress'),
            // Only calls have a gateway; an open messaging thread (sms, whatsapp, telegram) has none to lose.
            isNotNull(c.gatewayId),
            sql`(
              exists (select 1 from ${gatewayHeartbeats} h
                       where h.gateway_id = ${c.gatewayId}
                         and h.last_seen_at < ${at}::timestamptz - (h.interval_ms * ${opts.staleFactor}::numeric) * interval '1 millisecond'
                         and ${seenSince}::timestamptz < ${at}::timestamptz - (h.interval_ms * ${opts.staleFactor}::numeric) * interval '1 millisecond')
              or (not exists (select 1 from ${gatewayHeartbeats} h where h.gateway_id = ${c.gatewayId})
                  and ${c.startedAt} < ${at}::timestamptz - ${opts.neverSeenGraceMs}::numeric * interval '1 millisecond'
                  and ${seenSince}::timestamptz < ${at}::timestamptz - ${opts.neverSeenGraceMs}::numeric * interval '1 millisecond'))`,
          ),
        )
        .returning();
      if (rows.length > 0) await onFailed?.(tx, rows);
      return rows;
    });
  }

  /** The agent's transcription model at the call's version (the STT price can depend on it). */
  private async transcriptionModel(tx: Tx, conv: ConversationRow): Promise<string | undefined> {
    const [v] = await tx
      .select({ snapshot: agentVersions.snapshot })
      .from(agentVersions)
      .where(and(eq(agentVersions.agentId, conv.agentId), eq(agentVersions.version, conv.agentVersion)));
    const transcription = v?.snapshot.transcription as { model?: unknown } | undefined;
    return typeof transcription?.model === 'string' ? transcription.model : undefined;
  }
}
