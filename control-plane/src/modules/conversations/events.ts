import { SUBJECTS, newId } from '@vap/shared';
import type { Bus, EventKind, PlatformEvent } from '@vap/shared';
import type { ConversationRow } from './repository.js';

/** The spec's `caller {phoneNumber, country}` of a conversation. */
export function callerOf(row: ConversationRow): { phoneNumber: string | null; country: string | null } {
  return { phoneNumber: row.callerPhone, country: row.callerCountry };
}

/** The spec's `cost {totalUsd, llmUsd, ttsUsd, sttUsd, telephonyUsd}`, or null when never priced. */
export function costSummaryOf(row: ConversationRow) {
  const c = row.costs;
  if (!c) return null;
  return { totalUsd: c.total, llmUsd: c.llm.cost, ttsUsd: c.tts.cost, sttUsd: c.stt.cost, telephonyUsd: c.telephony.cost };
}

/** `SessionStarted` data (spec "Events"). */
export function sessionStartedData(row: ConversationRow): Record<string, unknown> {
  return { conversationId: row.id, channel: row.channel, direction: row.direction, caller: callerOf(row), metadata: row.metadata };
}

/**
 * `SessionEnded` data (spec "Events"). `cost` is null for a call the watchdog failed: its
 * gateway never reported usage.
 */
export function sessionEndedData(row: ConversationRow): Record<string, unknown> {
  return {
    conversationId: row.id,
    channel: row.channel,
    direction: row.direction,
    durationSeconds: row.durationSeconds ?? 0,
    endReason: row.endReason,
    caller: callerOf(row),
    cost: costSummaryOf(row),
    metadata: row.metadata,
  };
}

/** `Error` data (spec "Events"). */
export function errorData(conversationId: string, errorCode: string, errorMessage: string, recoverable: boolean): Record<string, unknown> {
  return { conversationId, errorCode, errorMessage, recoverable };
}

/** A platform event in the spec's envelope, with a fresh `evt_` id. */
export function buildEvent(type: EventKind, row: Pick<ConversationRow, 'tenantId' | 'agentId'>, data: Record<string, unknown>, nowMs: number): PlatformEvent {
  return { id: newId('evt', nowMs), type, agentId: row.agentId, tenantId: row.tenantId, timestamp: new Date(nowMs).toISOString(), data };
}

/**
 * Publishes a platform event on `event.<tenant>.<agent>.<type>` for in-platform listeners.
 * Called after the transaction that staged it for webhook delivery committed; the bus is
 * at-most-once, webhook delivery is not (modules/webhooks).
 */
export async function publishEvent(bus: Bus, event: PlatformEvent): Promise<void> {
  await bus.publish('platformEvent', SUBJECTS.platformEvent.subject(event.tenantId, event.agentId, event.type), event);
}
