import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Logger } from 'pino';
import { agentConfigSchema, newId, priceCall, unpricedUsage } from '@vap/shared';
import type { Bus, CallDirection, EventKind, Payload, PlatformEvent, ReplyPayload, RequestPayload } from '@vap/shared';
import type { StoredRecording } from '../../db/schema/conversations.js';
import type { SecretBox } from '../../secret-box.js';
import type { EventOutbox } from '../webhooks/event-outbox.js';
import { buildEvent, errorData, publishEvent, sessionEndedData, sessionStartedData } from './events.js';
import type { ConversationRepository, ConversationRow, InTransaction } from './repository.js';
import { GATEWAY_LOST, isLostRecord } from './repository.js';
import { StreamTokens } from '../telephony/stream-token.js';

/** A phone number in E.164 with its ISO country, or nulls when the value is not a phone number (`client:alice`, `anonymous`). */
export function parsePhone(raw: string | null): { phoneNumber: string | null; country: string | null } {
  const n = raw ? parsePhoneNumberFromString(raw.trim()) : undefined;
  if (!n || !n.isPossible()) return { phoneNumber: null, country: null };
  return { phoneNumber: n.number, country: n.country ?? null };
}

/** The conversation columns of a stored recording; retention counts from the end of the call. */
export function recordingFields(rec: Payload<'sessionEnded'>['recording'], endedAt: Date): { recording: StoredRecording | null; recordingKey: string | null; recordingExpiresAt: Date | null } {
  if (!rec) return { recording: null, recordingKey: null, recordingExpiresAt: null };
  const expiresAt = new Date(endedAt.getTime() + rec.retentionDays * 86_400_000);
  return {
    recording: { available: true, format: rec.format, channels: rec.channels, durationSeconds: rec.durationSeconds, sizeBytes: rec.sizeBytes, expiresAt: expiresAt.toISOString() },
    recordingKey: rec.key,
    recordingExpiresAt: expiresAt,
  };
}

/** Rules of the watchdog; see docs/api.md "Conversations (voice loop)". */
export interface LostCallRules {
  /** A gateway is lost when its last heartbeat is older than this many of its intervals. */
  staleFactor: number;
  /** Calls of a gateway that never sent a heartbeat are lost once this old (ms). */
  neverSeenGraceMs: number;
}

export const DEFAULT_LOST_CALL_RULES: LostCallRules = { staleFactor: 3, neverSeenGraceMs: 30_000 };

/**
 * A gateway's heartbeat row is deleted once this old (ms). Each gateway process has its own id,
 * so without this the table grows by one row per start, and the voice webhooks read it on
 * every inbound call (GatewayIntake). Its calls were failed long before (stale after three
 * intervals, at most 3 min); a call of a gateway without a row is judged as never seen.
 */
export const HEARTBEAT_RETENTION_MS = 3_600_000;

/**
 * The control plane's side of live calls: takes calls from gateways (`call.prepare`),
 * stores what they report, prices finished calls, fails calls of lost gateways and emits
 * the platform events. Every method is safe to run on several control planes at once:
 * correctness comes from row locks and conditional updates, not from who got the message.
 */
export class CallService {
  private readonly repo: ConversationRepository;
  private readonly bus: Bus;
  private readonly secrets: SecretBox;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly streamTokens: StreamTokens;
  private readonly outbox: EventOutbox;
  private readonly onFinished: InTransaction<ConversationRow>[];
  /**
   * Since when this control plane has seen every gateway heartbeat it was sent (ms, `now`
   * clock): its start, or the last time it could not store one or run a watchdog pass (the
   * database was unreachable), found itself cut off from the bus (NATS down or unreachable),
   * or found that its own event loop had stalled (the watchdog's timer came late).
   * A gateway is judged lost only on heartbeats missing over a window this control plane saw
   * whole: after a restart or an outage, the heartbeats it could not get or store are not taken
   * for a gateway gone quiet.
   */
  private heartbeatsSeenSince: number;

  /**
   * @param deps.onFinished hooks run inside the transaction that stores a call's end record
   *   (after the row is written): durable follow-up work such as post-call analysis is
   *   enqueued there, so it exists exactly when the call's data does.
   * @param deps.heartbeatsSeenSince see {@link heartbeatsSeenSince}; default `now()` (tests that
   *   date heartbeats in the past pass 0).
   */
  constructor(deps: { repo: ConversationRepository; bus: Bus; secrets: SecretBox; log: Logger; outbox: EventOutbox; now?: () => number; onFinished?: InTransaction<ConversationRow>[]; heartbeatsSeenSince?: number }) {
    this.repo = deps.repo;
    this.onFinished = deps.onFinished ?? [];
    this.outbox = deps.outbox;
    this.bus = deps.bus;
    this.secrets = deps.secrets;
    this.log = deps.log;
    this.now = deps.now ?? Date.now;
    this.heartbeatsSeenSince = deps.heartbeatsSeenSince ?? this.now();
    this.streamTokens = new StreamTokens(deps.secrets, () => this.now());
  }

  /** This control plane could not take heartbeats until now (an outage, or its loop stalled): gateway silence so far is not counted. */
  heartbeatsUnheardUntilNow(): void {
    this.heartbeatsSeenSince = Math.max(this.heartbeatsSeenSince, this.now());
  }

  /** A heartbeat or a watchdog pass failed: what the gateways said meanwhile is unknown here. */
  private blind<T>(work: Promise<T>): Promise<T> {
    return work.catch((err: unknown) => {
      this.heartbeatsUnheardUntilNow();
      throw err;
    });
  }

  /**
   * Answers a gateway's `call.prepare`: checks the stream token (Telnyx), tenant and agent,
   * creates the conversation (idempotent on the provider's call id: a retry gets the same
   * conversation while it is in progress, asked by the same gateway; from another gateway,
   * `call-in-progress`; once it has ended, `call-ended`) and emits
   * `SessionStarted` once, then returns the agent to run with its decrypted LLM key.
   * The caller is the party the agent talks to: `from` inbound, `to` outbound.
   */
  async prepare(req: RequestPayload<'callPrepare'>): Promise<ReplyPayload<'callPrepare'>> {
    const log = this.log.child({ tenantId: req.tenantId, agentId: req.agentId, callSid: req.callSid, provider: req.provider });
    if (req.provider === 'telnyx') {
      // Telnyx opens its stream unsigned: only the token our signed-webhook answer gave it shows we routed this call (stream-token.ts).
      const why = this.streamTokens.check(req.streamToken, req);
      if (why !== null) {
        log.warn({ reason: why }, 'Telnyx stream without a valid stream token refused');
        return { ok: false, code: 'stream-unauthenticated', message: `The stream's token is ${why}: a Telnyx stream must come from the platform's answer to the call's voice webhook.` };
      }
    }
    const found = await this.repo.agentForCall(req.tenantId, req.agentId);
    if (!found) return { ok: false, code: 'agent-not-found', message: `Agent ${req.agentId} does not exist in tenant ${req.tenantId}.` };
    if (found.tenantStatus !== 'active') return { ok: false, code: 'tenant-suspended', message: `The account ${req.tenantId} is not active.` };
    const { agent } = found;
    if (agent.status !== 'active') return { ok: false, code: 'agent-inactive', message: `Agent ${agent.id} is ${agent.status}; only active agents take calls.` };

    const config = agentConfigSchema.parse(agent.config);
    const llmApiKey = agent.llmApiKeyEncrypted ? this.secrets.open(agent.llmApiKeyEncrypted) : null;
    const remote = req.direction === 'inbound' ? req.from : req.to;
    const local = req.direction === 'inbound' ? req.to : req.from;
    const caller = parsePhone(remote);
    const nowMs = this.now();
    const staged: PlatformEvent[] = [];
    const { row, created } = await this.repo.createOrGet(
      {
        id: newId('conv', nowMs),
        tenantId: agent.tenantId,
        agentId: agent.id,
        agentName: agent.name,
        agentVersion: agent.version,
        channel: req.channel,
        status: 'in_progress',
        direction: req.direction,
        provider: req.provider,
        externalId: req.callSid,
        callerPhone: caller.phoneNumber,
        callerCountry: caller.country,
        calledPhone: parsePhone(local).phoneNumber ?? local,
        metadata: req.metadata,
        gatewayId: req.gatewayId,
        startedAt: new Date(nowMs),
      },
      this.staging(staged, (r) => [['SessionStarted', sessionStartedData(r)]]),
    );
    if (row.tenantId !== req.tenantId || row.agentId !== req.agentId) {
      // The same carrier call id for another tenant or agent: a gateway bug or a forged request.
      log.error({ conversationId: row.id }, 'call id already belongs to another conversation');
      return { ok: false, code: 'call-id-conflict', message: `Call id ${req.callSid} of ${req.provider} already belongs to another tenant's or agent's conversation.` };
    }
    if (created) {
      log.info({ conversationId: row.id, gatewayId: req.gatewayId }, 'call started');
      await this.announce(staged);
    } else if (row.status !== 'in_progress') {
      // The call's end record is stored: a session now would talk, bill its providers and have every message dropped.
      log.warn({ conversationId: row.id, status: row.status }, 'call.prepare for a call that has ended refused');
      return { ok: false, code: 'call-ended', message: `Call ${req.callSid} has ended (conversation ${row.id} is ${row.status}); a new stream cannot resume it.` };
    } else if (row.gatewayId !== null && row.gatewayId !== req.gatewayId) {
      // A retry comes from the gateway that asked first; a second stream elsewhere would be a second agent on one call.
      log.warn({ conversationId: row.id, gatewayId: req.gatewayId, carriedBy: row.gatewayId }, 'call.prepare for a call in progress on another gateway refused');
      return { ok: false, code: 'call-in-progress', message: `Call ${req.callSid} is in progress on another gateway (conversation ${row.id}).` };
    } else {
      log.info({ conversationId: row.id }, 'call.prepare retried; same conversation');
    }
    return {
      ok: true,
      conversationId: row.id,
      startedAt: row.startedAt.toISOString(),
      agent: { id: agent.id, tenantId: agent.tenantId, version: agent.version, config, llmApiKey },
      caller: { phoneNumber: row.callerPhone, country: row.callerCountry },
    };
  }

  /** Stores a live message; messages of unknown or already-ended conversations are dropped. */
  async recordMessage(msg: Payload<'sessionMessage'>): Promise<void> {
    const outcome = await this.repo.recordMessage(msg.tenantId, msg.conversationId, msg.message, msg.turn);
    if (outcome === 'unknown') this.log.warn({ tenantId: msg.tenantId, conversationId: msg.conversationId, messageId: msg.message.id }, 'message for an unknown conversation dropped');
    else if (outcome === 'closed') this.log.debug({ conversationId: msg.conversationId, messageId: msg.message.id }, 'message after the end record ignored');
  }

  /**
   * Stores a gateway's end record and prices the call in one transaction, then emits
   * `SessionEnded`. A duplicate record changes nothing and emits nothing. A record for a
   * call the watchdog already failed replaces the watchdog's guess (the gateway knows
   * better) and emits a corrected `SessionEnded`.
   */
  async end(rec: Payload<'sessionEnded'>): Promise<void> {
    const log = this.log.child({ tenantId: rec.tenantId, conversationId: rec.conversationId });
    let unpriced: string[] = [];
    const staged: PlatformEvent[] = [];
    const result = await this.repo.finish(
      rec.tenantId,
      rec.conversationId,
      rec,
      (row, transcriptionModel) => {
        const direction = row.direction as CallDirection;
        const costs = priceCall(rec.usage, direction, transcriptionModel ? { sttModel: transcriptionModel } : {});
        unpriced = unpricedUsage(rec.usage, direction);
        return {
          status: rec.status,
          endReason: rec.endReason,
          endedAt: new Date(rec.endedAt),
          durationSeconds: rec.durationSeconds,
          language: rec.language,
          costs,
          costTotalUsd: costs.total,
          error: rec.error,
          ...recordingFields(rec.recording, new Date(rec.endedAt)),
          turnMetrics: rec.turnMetrics,
        };
      },
      async (tx, row) => {
        for (const hook of this.onFinished) await hook(tx, row);
        await this.staging(staged, (r) => [['SessionEnded', sessionEndedData(r)]])(tx, row);
      },
    );
    if (result.kind === 'unknown') {
      log.warn('end record for an unknown conversation dropped');
      return;
    }
    if (result.kind === 'duplicate') {
      log.debug('duplicate end record ignored');
      return;
    }
    if (unpriced.length > 0) log.warn({ unpriced }, 'no price for some usage; counted as 0');
    if (isLostRecord(result.previous)) log.warn('end record arrived after the watchdog failed the call; record applied');
    log.info({ status: rec.status, endReason: rec.endReason, durationSeconds: rec.durationSeconds, costUsd: result.row.costTotalUsd }, 'call ended');
    await this.announce(staged);
  }

  /** Relays a gateway's error as the platform event `Error` (conversation checked first). */
  async reportError(err: Payload<'sessionError'>): Promise<void> {
    await this.relay(err, 'Error', (row) => errorData(row.id, err.errorCode, err.errorMessage, err.recoverable), this.now());
  }

  /** Relays what the agent did (`ToolCallCompleted`, `TransferInitiated`) as a platform event. */
  async reportEvent(msg: Payload<'sessionEvent'>): Promise<void> {
    await this.relay(msg, msg.event.type, (row) => ({ conversationId: row.id, ...msg.event.data }), Date.parse(msg.at) || this.now());
  }

  /**
   * A gateway-reported event with no state change: checked against the conversation (an
   * unknown one, or one of another agent, is dropped), staged on its own, then announced.
   */
  private async relay(from: { tenantId: string; conversationId: string; agentId: string }, type: EventKind, dataOf: (row: ConversationRow) => Record<string, unknown>, atMs: number): Promise<void> {
    const row = await this.repo.find(from.tenantId, from.conversationId);
    if (!row || row.agentId !== from.agentId) {
      this.log.warn({ tenantId: from.tenantId, conversationId: from.conversationId, type }, 'event for an unknown conversation dropped');
      return;
    }
    const event = buildEvent(type, row, dataOf(row), atMs);
    await this.outbox.stage(this.repo.executor, event);
    await this.announce([event]);
  }

  /**
   * Records a gateway heartbeat; then fails its in-progress calls missing from the
   * heartbeat's lists (active, and still being prepared) that had started two intervals
   * before the heartbeat arrived (the gateway restarted or dropped them). The check waits
   * `settleMs` first, so an end record the gateway sent just before this heartbeat, and that
   * another control plane is storing, commits first; the two intervals are counted from the
   * arrival, not from after that wait, which would shorten them (with a 500 ms interval, to
   * nothing: a call answered a moment before a beat was failed on a busy machine).
   */
  async heartbeat(hb: Payload<'gatewayHeartbeat'>, settleMs = 0): Promise<void> {
    const arrivedMs = this.now();
    await this.blind(this.repo.heartbeat(hb.gatewayId, hb.intervalMs, new Date(arrivedMs), hb.draining ?? false));
    if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
    const staged: PlatformEvent[] = [];
    const lost = await this.repo.failMissing(hb.gatewayId, { conversationIds: hb.activeConversationIds, preparing: hb.preparing ?? [] }, new Date(arrivedMs - 2 * hb.intervalMs), new Date(this.now()), this.stagingLost(staged));
    if (lost.length > 0) this.log.warn({ gatewayId: hb.gatewayId, conversationIds: lost.map((r) => r.id) }, 'calls missing from their gateway heartbeat failed');
    await this.announce(staged);
  }

  /**
   * One watchdog pass: fails the calls of gateways that went quiet; returns how many. Only
   * silence this control plane witnessed counts (see {@link heartbeatsSeenSince}). Then
   * forgets gateways gone for {@link HEARTBEAT_RETENTION_MS}.
   */
  async failLostCalls(rules: LostCallRules = DEFAULT_LOST_CALL_RULES): Promise<number> {
    if (!this.bus.connected) {
      // Cut off from the bus: no heartbeat reaches this control plane, whatever the gateways do.
      this.heartbeatsUnheardUntilNow();
      return 0;
    }
    const staged: PlatformEvent[] = [];
    const lost = await this.blind(this.repo.failStale(new Date(this.now()), { ...rules, seenSince: new Date(this.heartbeatsSeenSince) }, this.stagingLost(staged)));
    if (lost.length > 0) this.log.warn({ conversationIds: lost.map((r) => r.id), gatewayIds: [...new Set(lost.map((r) => r.gatewayId))] }, 'calls of lost gateways failed');
    await this.announce(staged);
    await this.repo.pruneHeartbeats(new Date(this.now() - HEARTBEAT_RETENTION_MS));
    return lost.length;
  }

  /**
   * An in-transaction hook that builds the events of a written row and stages them in the
   * outbox (webhook delivery); they are also collected into `into` for `announce`.
   */
  private staging(into: PlatformEvent[], eventsOf: (row: ConversationRow) => [EventKind, Record<string, unknown>][]): InTransaction<ConversationRow> {
    return async (tx, row) => {
      for (const [type, data] of eventsOf(row)) {
        const event = buildEvent(type, row, data, this.now());
        await this.outbox.stage(tx, event);
        into.push(event);
      }
    };
  }

  /** Lost calls: `Error` (gateway_lost) then `SessionEnded`, for each call. */
  private stagingLost(into: PlatformEvent[]): InTransaction<ConversationRow[]> {
    const one = this.staging(into, (row) => [
      ['Error', errorData(row.id, GATEWAY_LOST, row.error?.message ?? 'The media gateway carrying this call stopped responding', false)],
      ['SessionEnded', sessionEndedData(row)],
    ]);
    return async (tx, rows) => {
      for (const row of rows) await one(tx, row);
    };
  }

  /** After commit: wakes the local webhook dispatcher and publishes the events on the bus. */
  private async announce(events: PlatformEvent[]): Promise<void> {
    if (events.length === 0) return;
    this.outbox.wake();
    for (const event of events) {
      try {
        await publishEvent(this.bus, event);
      } catch (err) {
        // The data and the webhook deliveries are committed; a lost bus event must not fail the caller.
        this.log.error({ err, type: event.type, conversationId: event.data.conversationId }, 'platform event not published on the bus');
      }
    }
  }
}
