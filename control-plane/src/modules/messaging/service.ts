import type { Logger } from 'pino';
import { agentConfigSchema, newId } from '@vap/shared';
import type { AgentConfig } from '@vap/shared';
import { isUniqueViolation } from '../../db/errors.js';
import { parsePhone } from '../conversations/call-service.js';
import type { AnalysisLlms } from '../conversations/analysis-llm.js';
import type { ConversationRepository, ConversationRow, SessionMessage } from '../conversations/repository.js';
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import { MESSAGING_REPLY_TIMEOUT_MS, REPLY_MAX_CHARS, cutReply, generateReply, messagingSystemPrompt, replyMessages } from './agent-reply.js';
import type { MessagingChannel, MessagingRepository } from './repository.js';
import { THREAD_PEER_KEY } from './repository.js';

/** A thread reopens as a new conversation when its last message is older than this (ms): 24 h, WhatsApp's free-form reply window. */
export const THREAD_IDLE_MS = 24 * 60 * 60 * 1000;

/** Sent instead of the agent's reply when it could not be produced (LLM failure, timeout, database trouble after the message was stored). */
export const MESSAGING_APOLOGY = 'Sorry, I cannot reply right now. Please try again in a little while.';

/** Sent to a message without text (voice note, sticker, picture); nothing is stored. */
export const TEXT_ONLY_REPLY = 'Sorry, I can only read text messages for now. Could you type your message?';

/** One inbound text message, as the provider's callback describes it. */
export interface InboundMessage {
  channel: MessagingChannel;
  /** The conversation's `provider` (`twilio`, `telegram`). */
  provider: string;
  tenantId: string;
  agentId: string;
  /** The thread's other party: sender E.164 (SMS, WhatsApp) or Telegram chat id. */
  peer: string;
  /** The provider's id of this message (`MessageSid`, `<bot>:<update_id>`): duplicates are recognised by it. */
  messageId: string;
  text: string;
  /** Sender and recipient numbers (SMS, WhatsApp); null for Telegram. */
  from: string | null;
  to: string | null;
  /** Extra metadata of a new thread (profile name, chat type …), beside `peer`. */
  metadata: Record<string, string>;
}

/** What became of an inbound message. */
export type Receipt =
  /** Stored; `reply()` produces the answer. */
  | { kind: 'accepted'; pending: PendingReply }
  /** Seen before: `reply` is the answer given then (null: that delivery is still running, or answered nothing). */
  | { kind: 'duplicate'; reply: string | null }
  /** The agent cannot take messages (gone, not active, tenant suspended): nothing stored. */
  | { kind: 'unavailable'; reason: 'agent-not-found' | 'agent-inactive' | 'tenant-suspended' };

/** A stored user message waiting for the agent's answer. */
export interface PendingReply {
  conversation: ConversationRow;
  agent: AgentConfig;
  message: InboundMessage;
  claimKey: string;
}

/** The answer to a stored message; `failed` means `text` is the apology. */
export interface ReplyOutcome {
  text: string;
  failed: boolean;
  error?: unknown;
}

/**
 * Text threads with an agent (SMS, WhatsApp, Telegram): the provider callback hands in a
 * message; it is stored on the thread's conversation, the agent's LLM answers with the
 * thread so far, and the answer is stored too. A provider redelivering a message gets the
 * first answer back instead of a second copy: the message id is claimed in the
 * idempotency store (24 h, per tenant) before anything is written.
 */
export class MessagingService {
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(private readonly deps: { conversations: ConversationRepository; threads: MessagingRepository; idempotency: IdempotencyStore; llms: () => Promise<AnalysisLlms>; log: Logger; now?: () => number }) {
    this.log = deps.log;
    this.now = deps.now ?? Date.now;
  }

  /** Checks the agent, claims the message id, finds or opens the thread and stores the message. */
  async receive(msg: InboundMessage): Promise<Receipt> {
    const found = await this.deps.conversations.agentForCall(msg.tenantId, msg.agentId);
    if (!found) return { kind: 'unavailable', reason: 'agent-not-found' };
    if (found.tenantStatus !== 'active') return { kind: 'unavailable', reason: 'tenant-suspended' };
    if (found.agent.status !== 'active') return { kind: 'unavailable', reason: 'agent-inactive' };
    const agentRow = found.agent;
    const agent = agentConfigSchema.parse(agentRow.config);

    // A space never occurs in an HTTP Idempotency-Key, so these keys cannot meet an API client's.
    const claimKey = `messaging ${msg.provider} ${msg.messageId}`;
    const claim = await this.deps.idempotency.claim(msg.tenantId, claimKey, claimKey);
    if (claim.kind === 'in_progress' || claim.kind === 'mismatch') return { kind: 'duplicate', reply: null };
    if (claim.kind === 'replay') return { kind: 'duplicate', reply: (JSON.parse(claim.body) as { reply: string | null }).reply };

    try {
      const nowMs = this.now();
      const caller = msg.from ? parsePhone(msg.from) : { phoneNumber: null, country: null };
      const open = () =>
        this.deps.threads.openThread({ tenantId: msg.tenantId, agentId: msg.agentId, channel: msg.channel, peer: msg.peer }, new Date(nowMs - THREAD_IDLE_MS), () => ({
          id: newId('conv', nowMs),
          tenantId: msg.tenantId,
          agentId: agentRow.id,
          agentName: agentRow.name,
          agentVersion: agentRow.version,
          channel: msg.channel,
          status: 'in_progress',
          direction: 'inbound',
          provider: msg.provider,
          // Unique per provider: the message that opened the thread.
          externalId: msg.messageId,
          callerPhone: caller.phoneNumber,
          callerCountry: caller.country,
          calledPhone: msg.to ? (parsePhone(msg.to).phoneNumber ?? msg.to) : null,
          metadata: { ...msg.metadata, [THREAD_PEER_KEY]: msg.peer },
          gatewayId: null,
          startedAt: new Date(nowMs),
        }));
      // The idle sweep (housekeeping, on any control plane) may close the thread between
      // openThread's lock and the message's insert, when the message comes just as the thread
      // turns idle: the thread stays as it was closed, and the message opens a new one.
      for (let attempt = 1; ; attempt++) {
        const { row, closed } = await open();
        if (closed) this.log.info({ conversationId: closed.id, tenantId: msg.tenantId }, 'idle messaging thread closed');
        if ((await this.append(row, 'user', msg.text, 'text', nowMs)) === 'stored') return { kind: 'accepted', pending: { conversation: row, agent, message: msg, claimKey } };
        if (attempt === 2) throw new Error(`messaging thread ${row.id} was closed again while its message was stored`);
        this.log.info({ conversationId: row.id, tenantId: msg.tenantId }, 'messaging thread closed while a message was stored; the message opens a new thread');
      }
    } catch (err) {
      // Nothing stored (or only the thread): let the provider's retry run again.
      await this.deps.idempotency.release(msg.tenantId, claimKey).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The agent's answer to a stored message: the LLM sees the system prompt and the thread
   * (this message last), within {@link MESSAGING_REPLY_TIMEOUT_MS}. The answer is stored
   * and remembered for redeliveries. Never throws: any failure answers the apology (also
   * remembered, since the message is stored and a redelivery must not store it twice).
   */
  async reply(p: PendingReply): Promise<ReplyOutcome> {
    const { conversation: conv, message: msg } = p;
    let outcome: ReplyOutcome;
    try {
      const history = await this.deps.conversations.messages(conv.id);
      const system = messagingSystemPrompt(p.agent, { channel: msg.channel, conversationId: conv.id, callerNumber: conv.callerPhone, calledNumber: conv.calledPhone, metadata: { ...msg.metadata }, now: new Date(this.now()) });
      const { llm, model } = (await this.deps.llms()).pick(p.agent.llm);
      const generated = await generateReply(llm, { ...p.agent.llm, model }, replyMessages(system, history), AbortSignal.timeout(MESSAGING_REPLY_TIMEOUT_MS));
      const text = cutReply(generated.text, REPLY_MAX_CHARS[msg.channel]);
      if ((await this.append(conv, 'agent', text, 'llm', this.now())) !== 'stored') throw new Error(`messaging thread ${conv.id} was closed before the reply was stored`);
      this.log.info({ conversationId: conv.id, tenantId: conv.tenantId, channel: msg.channel, inputTokens: generated.inputTokens, outputTokens: generated.outputTokens }, 'messaging reply generated');
      outcome = { text, failed: false };
    } catch (error) {
      outcome = { text: MESSAGING_APOLOGY, failed: true, error };
    }
    await this.deps.idempotency.complete(conv.tenantId, p.claimKey, 200, JSON.stringify({ reply: outcome.text }), 'application/json').catch((err: unknown) => {
      this.log.error({ err, conversationId: conv.id }, 'messaging reply not remembered; a redelivery would be answered again');
    });
    return outcome;
  }

  /**
   * Appends a message at the thread's next position through the voice loop's
   * `recordMessage`. Two messages of one thread stored at once may pick the same position:
   * the loser's unique violation is retried with the next one. `closed`: the thread is no
   * longer in progress, nothing was stored.
   */
  private async append(conv: ConversationRow, role: 'user' | 'agent', content: string, source: SessionMessage['source'], atMs: number): Promise<'stored' | 'closed'> {
    for (let attempt = 1; ; attempt++) {
      const seq = await this.deps.threads.nextSeq(conv.id);
      const message: SessionMessage = { id: newId('msg', atMs), seq, role, content, source, interrupted: false, durationMs: 0, timestamp: new Date(atMs).toISOString() };
      try {
        const stored = await this.deps.conversations.recordMessage(conv.tenantId, conv.id, message, null);
        if (stored === 'unknown') throw new Error(`messaging thread ${conv.id} is unknown`);
        return stored;
      } catch (err) {
        if (attempt >= 10 || !isUniqueViolation(err, 'conversation_messages_seq_key')) throw err;
      }
    }
  }
}
