import { SUBJECTS, newId } from '@vap/shared';
import type { Bus, Payload } from '@vap/shared';
import type { ConversationRow } from './repository.js';

type EventType = Payload<'platformEvent'>['type'];

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

/**
 * Publishes one platform event in the spec's envelope on `event.<tenant>.<agent>.<type>`.
 * Published after the data it describes is committed; the bus is at-most-once, so a
 * control plane that dies between commit and publish loses the event (the webhook
 * delivery issue adds an outbox if that matters).
 */
export async function publishEvent(bus: Bus, type: EventType, tenantId: string, agentId: string, data: Record<string, unknown>, nowMs: number): Promise<void> {
  const event: Payload<'platformEvent'> = { id: newId('evt', nowMs), type, agentId, tenantId, timestamp: new Date(nowMs).toISOString(), data };
  await bus.publish('platformEvent', SUBJECTS.platformEvent.subject(tenantId, agentId, type), event);
}
