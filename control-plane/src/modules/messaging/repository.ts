import { and, desc, eq, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { agents } from '../../db/schema/agents.js';
import { conversationMessages, conversations } from '../../db/schema/conversations.js';
import type { ConversationRow, NewConversation } from '../conversations/repository.js';

/** The conversation channels a text thread runs on (spec "Conversation.channel"). */
export type MessagingChannel = 'sms' | 'whatsapp' | 'telegram';

/** Metadata key holding a thread's other party: the sender's E.164 (SMS, WhatsApp) or the Telegram chat id. */
export const THREAD_PEER_KEY = 'peer';

/** Who a thread is with: one agent of one tenant, on one channel, with one peer. */
export interface ThreadKey {
  tenantId: string;
  agentId: string;
  channel: MessagingChannel;
  /** E.164 of the sender (SMS, WhatsApp) or the Telegram chat id, as text. */
  peer: string;
}

/** The thread a message belongs to; `closed` is the idle thread this message retired, if any. */
export interface OpenedThread {
  row: ConversationRow;
  created: boolean;
  closed: ConversationRow | null;
}

/**
 * Messaging threads stored as conversations. A thread is an `in_progress` conversation of
 * (tenant, agent, channel) whose metadata `peer` is the other party; messages go in through
 * `ConversationRepository.recordMessage`, like the voice loop's live messages.
 */
/**
 * The advisory-lock key of one messaging thread (tenant, agent, channel, peer):
 * `messaging:<tenant>:<agent>:<channel>:<peer>`, hashed. One expression for the writer
 * ({@link MessagingRepository.openThread}, with values) and the idle sweep (with columns), so
 * the sweep always skips the thread a message is being written to.
 */
export function threadLock(tenantId: SQL, agentId: SQL, channel: SQL, peer: SQL): SQL {
  return sql`hashtextextended('messaging:' || (${tenantId})::text || ':' || (${agentId})::text || ':' || (${channel})::text || ':' || (${peer})::text, 0)`;
}

export class MessagingRepository {
  constructor(private readonly db: Db) {}

  /**
   * The open thread of `key` whose last message (else its start) is at or after
   * `idleSince`; otherwise retires an idle open thread (`completed`, `idle_timeout`,
   * ended at its last message) and inserts `create()`. A transaction-scoped advisory lock
   * on the thread key serialises this per peer, so two messages sent at once (a user
   * typing fast, on two control planes) land in one thread instead of opening two.
   */
  async openThread(key: ThreadKey, idleSince: Date, create: () => NewConversation): Promise<OpenedThread> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${threadLock(sql`${key.tenantId}`, sql`${key.agentId}`, sql`${key.channel}`, sql`${key.peer}`)})`);
      const c = conversations;
      const lastAt = sql<Date | null>`(select max(${conversationMessages.timestamp}) from ${conversationMessages} where ${conversationMessages.conversationId} = ${c.id})`.mapWith(c.startedAt);
      const [open] = await tx
        .select({ row: c, lastAt })
        .from(c)
        .where(and(eq(c.tenantId, key.tenantId), eq(c.agentId, key.agentId), eq(c.channel, key.channel), eq(c.status, 'in_progress'), sql`${c.metadata}->>${THREAD_PEER_KEY} = ${key.peer}`))
        .orderBy(desc(c.startedAt))
        .limit(1);
      const lastActivity = open ? (open.lastAt ?? open.row.startedAt) : null;
      if (open && lastActivity && lastActivity >= idleSince) return { row: open.row, created: false, closed: null };
      let closed: ConversationRow | null = null;
      if (open && lastActivity) {
        const durationSeconds = Math.max(0, Math.floor((lastActivity.getTime() - open.row.startedAt.getTime()) / 1000));
        [closed = null] = await tx
          .update(c)
          .set({ status: 'completed', endReason: 'idle_timeout', endedAt: lastActivity, durationSeconds, updatedAt: sql`now()` })
          .where(and(eq(c.id, open.row.id), eq(c.status, 'in_progress')))
          .returning();
      }
      const [row] = await tx.insert(c).values(create()).returning();
      return { row: row!, created: true, closed };
    });
  }

  /**
   * Completes open threads (channels `sms`, `whatsapp`, `telegram`; no gateway) whose last
   * message (else their start) is before `idleSince`, as {@link openThread} would on the
   * peer's next message: `completed`, `idle_timeout`, ended at the last message. At most
   * `limit` per call (housekeeping calls it every run). A thread whose peer is writing right
   * now (its advisory lock held by {@link openThread}) is skipped, never closed under it.
   * Returns how many were closed.
   */
  async closeIdleThreads(idleSince: Date, limit = 500): Promise<number> {
    const result = await this.db.transaction(async (tx) =>
      tx.execute(sql`
        with idle as (
          select c.id, coalesce(m.last_at, c.started_at) as last_at, c.started_at
          from conversations c
          left join lateral (select max(timestamp) as last_at from conversation_messages where conversation_id = c.id) m on true
          where c.status = 'in_progress' and c.gateway_id is null and c.channel in ('sms', 'whatsapp', 'telegram')
            and coalesce(m.last_at, c.started_at) < ${idleSince}
          order by c.started_at
          limit ${limit}
        ), claimable as (
          select idle.* from idle join conversations c on c.id = idle.id
          where pg_try_advisory_xact_lock(${threadLock(sql`c.tenant_id`, sql`c.agent_id`, sql`c.channel`, sql`c.metadata->>${THREAD_PEER_KEY}`)})
        )
        update conversations c
        set status = 'completed', end_reason = 'idle_timeout', ended_at = claimable.last_at,
            duration_seconds = greatest(0, floor(extract(epoch from claimable.last_at - claimable.started_at)))::int, updated_at = now()
        from claimable
        where c.id = claimable.id and c.status = 'in_progress'`),
    );
    return result.rowCount ?? 0;
  }

  /** The tenant of an agent, by id alone (a Telegram webhook names only the agent); undefined when it does not exist. */
  async agentTenant(agentId: string): Promise<string | undefined> {
    const [row] = await this.db.select({ tenantId: agents.tenantId }).from(agents).where(eq(agents.id, agentId));
    return row?.tenantId;
  }

  /** The next free message position of a conversation (0 for the first). */
  async nextSeq(conversationId: string): Promise<number> {
    const [row] = await this.db
      .select({ next: sql<number>`coalesce(max(${conversationMessages.seq}) + 1, 0)::int` })
      .from(conversationMessages)
      .where(eq(conversationMessages.conversationId, conversationId));
    return row?.next ?? 0;
  }
}
