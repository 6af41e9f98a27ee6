import { z } from 'zod';
import { agentConfigSchema } from '../agent-config.js';

/** A caller as the spec's Conversation and SessionStarted payloads carry it. */
export const callerSchema = z.object({ phoneNumber: z.string().nullable(), country: z.string().nullable() });

/** One stored chat message of a call (spec: Conversation → Message), plus what the caller heard. */
export const sessionMessageSchema = z.object({
  id: z.string(),
  /** Order within the conversation (0, 1, 2 …); messages are stored and listed by it. */
  seq: z.number().int().min(0),
  role: z.enum(['agent', 'user']),
  content: z.string(),
  timestamp: z.string(),
  durationMs: z.number().int().min(0),
  /** The agent was cut off by the caller; `content` is what was played before the cut. */
  interrupted: z.boolean(),
  /** `speech`, `dtmf` (digits the caller pressed) or `system` (first message, idle prompt, goodbye); `text` a typed message (SMS, WhatsApp, Telegram). */
  source: z.enum(['speech', 'dtmf', 'system', 'llm', 'text']),
});

export const transcriptWordSchema = z.object({ word: z.string(), startTime: z.number(), endTime: z.number(), confidence: z.number().min(0).max(1) });

/** One transcript turn (spec: Transcript.turns[]); times are seconds from the start of the call. */
export const transcriptTurnSchema = z.object({
  id: z.string(),
  seq: z.number().int().min(0),
  speaker: z.enum(['agent', 'user']),
  text: z.string(),
  startTime: z.number().min(0),
  endTime: z.number().min(0),
  confidence: z.number().min(0).max(1),
  words: z.array(transcriptWordSchema),
});

/** Usage measured during a call; the control plane prices it from one price table. */
export const sessionUsageSchema = z.object({
  llm: z.object({ provider: z.string(), model: z.string(), inputTokens: z.number().int().min(0), outputTokens: z.number().int().min(0) }),
  tts: z.object({ provider: z.string(), characters: z.number().int().min(0) }),
  stt: z.object({ provider: z.string(), audioSeconds: z.number().min(0) }),
  telephony: z.object({ provider: z.string(), seconds: z.number().min(0) }),
});

/** A recording the gateway stored (object store key relative to the store's root). */
export const callRecordingSchema = z.object({
  key: z.string().min(1),
  format: z.enum(['mp3', 'wav']),
  /** 2: caller left, agent right; 1: both mixed. */
  channels: z.union([z.literal(1), z.literal(2)]),
  durationSeconds: z.number().min(0),
  sizeBytes: z.number().int().min(0),
  /** The agent's `recording.storageRetentionDays` when the call started. */
  retentionDays: z.number().int().min(1),
});

export const conversationStatusSchema = z.enum(['in_progress', 'completed', 'failed', 'abandoned']);

/**
 * Where the time of one agent reply went (ms, whole numbers), from the end of the caller's
 * speech to the first agent audio handed to the carrier. `totalMs` = endpointing + retrieval +
 * LLM first token + TTS first byte + overhead; `sttMs` (end of speech → final transcript) runs inside
 * the endpointing wait, so it is not a slice of its own.
 */
export const turnMetricsSchema = z.object({
  turnId: z.string(),
  /** End of speech → turn decision. */
  endpointingMs: z.number().int().min(0),
  /** End of speech → STT final transcript. */
  sttMs: z.number().int().min(0),
  /**
   * Caller turn decided → knowledge-base passages in hand (agents with `knowledgeBaseIds`;
   * 0 otherwise, and in breakdowns stored before retrieval existed). A slice of its own.
   */
  retrievalMs: z.number().int().min(0).default(0),
  /** LLM request → first token. */
  llmFirstTokenMs: z.number().int().min(0),
  /**
   * First token → the reply's first phrase complete and handed to TTS (the LLM's text pace
   * over the first phrase's words). 0 in breakdowns stored before it existed, where it is
   * part of `overheadMs`.
   */
  llmFirstPhraseMs: z.number().int().min(0).default(0),
  /** First sentence to TTS → first audio byte. */
  ttsFirstByteMs: z.number().int().min(0),
  /** The rest: queues, pacing, transport, our code. */
  overheadMs: z.number().int().min(0),
  /** End of speech → first agent audio handed to the carrier. */
  totalMs: z.number().int().min(0),
});

/** The agent a gateway runs for one call: a snapshot taken when the call starts. */
export const callAgentSchema = z.object({
  id: z.string(),
  tenantId: z.string(),
  version: z.number().int(),
  config: agentConfigSchema,
  /** Decrypted bring-your-own LLM key (huggingface endpoints), or null. Never logged. */
  llmApiKey: z.string().nullable(),
});

/**
 * Every bus subject with the zod schema of its payload (STYLE.md §2). Subjects are
 * lowercase and dotted, broad to narrow. Payloads are validated when they arrive.
 */
/** The platform's event kinds (spec "Events"): what webhooks subscribe to. */
export const EVENT_KINDS = ['SessionStarted', 'SessionEnded', 'ToolCallCompleted', 'TransferInitiated', 'AnalysisCompleted', 'Error'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** A platform event in the spec's envelope, as published on the bus and sent to webhooks. */
export interface PlatformEvent {
  id: string;
  type: EventKind;
  agentId: string;
  tenantId: string;
  /** ISO 8601, when the event happened. */
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * A call's end record: the whole record (every message and turn, usage), so the control plane
 * can store it in one transaction whatever order earlier messages took. The gateway delivers it
 * as the request `call.end` (REQUESTS.callEnd) until a control plane has stored it.
 */
export const sessionEndRecordSchema = z.object({
  conversationId: z.string(),
  tenantId: z.string(),
  agentId: z.string(),
  status: conversationStatusSchema.exclude(['in_progress']),
  /** `user_ended` (caller hung up), `agent_ended` (end-call phrase), `max_duration`, `idle_timeout`, `error`, `gateway_shutdown`. */
  endReason: z.string(),
  endedAt: z.string(),
  durationSeconds: z.number().int().min(0),
  language: z.string(),
  messages: z.array(sessionMessageSchema),
  turns: z.array(transcriptTurnSchema),
  usage: sessionUsageSchema,
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** The call's recording, already in the recording store; null when the agent does not record or it failed. */
  recording: callRecordingSchema.nullable().default(null),
  /**
   * Latency of each agent reply, in call order. A malformed breakdown is dropped (`[]`)
   * rather than failing the message: it must not cost the call's record.
   */
  turnMetrics: z.array(turnMetricsSchema).default([]).catch([]),
});

export const SUBJECTS = {
  /** An agent's configuration changed or it was deleted; gateways drop cached copies. */
  agentChanged: {
    subject: (tenantId: string, agentId: string) => `agent.${tenantId}.${agentId}.changed`,
    wildcard: 'agent.*.*.changed',
    schema: z.object({
      tenantId: z.string(),
      agentId: z.string(),
      version: z.number().int().nullable(),
      change: z.enum(['created', 'updated', 'status', 'published', 'deleted']),
      at: z.string(),
    }),
  },
  /**
   * An API key was revoked or its rights changed: every control-plane replica drops its
   * cached lookup of that key at once, so the next request with it reads the database.
   */
  apiKeyChanged: {
    subject: (tenantId: string, keyId: string) => `apikey.${tenantId}.${keyId}.changed`,
    wildcard: 'apikey.*.*.changed',
    schema: z.object({ tenantId: z.string(), keyId: z.string(), change: z.enum(['revoked', 'updated']), at: z.string() }),
  },
  /** A service instance announces itself on start (used by health views and tests). */
  serviceStarted: {
    subject: (service: string) => `service.${service}.started`,
    wildcard: 'service.*.started',
    schema: z.object({ service: z.string(), instanceId: z.string(), at: z.string() }),
  },
  /**
   * A gateway's pulse, every few seconds, naming the calls it is carrying. A control plane
   * fails `in_progress` conversations of a gateway that has gone quiet (crash, kill -9).
   * `draining`: the gateway is shutting down and takes no new call (sent at once when the
   * drain starts); while every gateway heard from drains, a control plane answers carriers'
   * new calls with its apology instead of a stream that would be refused. Absent (gateways of
   * earlier versions): not draining. `preparing`: the carrier calls whose `call.prepare` the
   * gateway has sent and not yet had answered. The control plane creates a conversation when it
   * answers, so until the answer reaches the gateway the conversation is in progress on this
   * gateway without being in `activeConversationIds`; it is not taken for dropped. Absent
   * (gateways of earlier versions): none.
   */
  gatewayHeartbeat: {
    subject: (gatewayId: string) => `gateway.${gatewayId}.heartbeat`,
    wildcard: 'gateway.*.heartbeat',
    schema: z.object({
      gatewayId: z.string(),
      activeConversationIds: z.array(z.string()),
      intervalMs: z.number().int().positive(),
      at: z.string(),
      draining: z.boolean().optional(),
      preparing: z.array(z.object({ provider: z.string(), callSid: z.string() })).optional(),
    }),
  },
  /** A message of a live call was spoken or heard; stored at once so a crash loses little. */
  sessionMessage: {
    subject: (tenantId: string, conversationId: string) => `session.${tenantId}.${conversationId}.message`,
    wildcard: 'session.*.*.message',
    schema: z.object({ conversationId: z.string(), tenantId: z.string(), message: sessionMessageSchema, turn: transcriptTurnSchema.nullable() }),
  },
  /**
   * A call ended ({@link sessionEndRecordSchema}), published by gateways of earlier versions;
   * a control plane still stores it, so gateways may be upgraded after the control planes.
   * Gateways now send the record as the request `call.end`, which is acknowledged.
   */
  sessionEnded: {
    subject: (tenantId: string, conversationId: string) => `session.${tenantId}.${conversationId}.ended`,
    wildcard: 'session.*.*.ended',
    schema: sessionEndRecordSchema,
  },
  /** A provider failed during a call (spec event `Error`). */
  sessionError: {
    subject: (tenantId: string, conversationId: string) => `session.${tenantId}.${conversationId}.error`,
    wildcard: 'session.*.*.error',
    schema: z.object({
      conversationId: z.string(),
      tenantId: z.string(),
      agentId: z.string(),
      errorCode: z.string(),
      errorMessage: z.string(),
      recoverable: z.boolean(),
      at: z.string(),
    }),
  },
  /**
   * Something the agent did during a call that customers are told about (spec events
   * `ToolCallCompleted`, `TransferInitiated`). The control plane checks the conversation,
   * adds `conversationId` to `data` and stages the event for webhook delivery.
   */
  sessionEvent: {
    subject: (tenantId: string, conversationId: string) => `session.${tenantId}.${conversationId}.event`,
    wildcard: 'session.*.*.event',
    schema: z.object({
      conversationId: z.string(),
      tenantId: z.string(),
      agentId: z.string(),
      at: z.string(),
      event: z.discriminatedUnion('type', [
        z.object({
          type: z.literal('ToolCallCompleted'),
          data: z.object({
            toolName: z.string(),
            toolType: z.string(),
            input: z.record(z.string(), z.unknown()),
            output: z.record(z.string(), z.unknown()),
            latencyMs: z.number(),
            success: z.boolean(),
          }),
        }),
        z.object({
          type: z.literal('TransferInitiated'),
          data: z.object({ transferTo: z.string(), transferType: z.string(), reason: z.string(), summaryForAgent: z.string() }),
        }),
      ]),
    }),
  },
  /**
   * A platform event (spec "Events" envelope), published by the control plane once the
   * data it describes is stored. The webhooks issue delivers these.
   */
  platformEvent: {
    subject: (tenantId: string, agentId: string, type: string) => `event.${tenantId}.${agentId}.${type}`,
    wildcard: 'event.>',
    schema: z.object({
      id: z.string(),
      type: z.enum(EVENT_KINDS),
      agentId: z.string(),
      tenantId: z.string(),
      timestamp: z.string(),
      data: z.record(z.string(), z.unknown()),
    }),
  },
} as const;

export type SubjectName = keyof typeof SUBJECTS;
export type Payload<N extends SubjectName> = z.infer<(typeof SUBJECTS)[N]['schema']>;

/**
 * Request/reply subjects: exactly one responder (a queue group) answers each request.
 */
export const REQUESTS = {
  /**
   * A gateway has a call on the line and asks a control plane to take it: the control plane
   * checks the stream's token (Telnyx), agent and tenant, creates the conversation (`in_progress`, idempotent on the
   * provider's call id), emits `SessionStarted`, and answers with the agent to run.
   */
  callPrepare: {
    subject: 'call.prepare',
    request: z.object({
      provider: z.enum(['twilio', 'telnyx', 'vonage', 'sip', 'webrtc']),
      channel: z.enum(['phone', 'webrtc']),
      direction: z.enum(['inbound', 'outbound']),
      /** The provider's call id (Twilio CallSid). */
      callSid: z.string().min(1),
      tenantId: z.string(),
      agentId: z.string(),
      from: z.string().nullable(),
      to: z.string().nullable(),
      metadata: z.record(z.string(), z.string()),
      gatewayId: z.string(),
      /** The stream's `streamToken` parameter, as the control plane's answer to the voice webhook set it; required for Telnyx, whose streams are unsigned. */
      streamToken: z.string().optional(),
    }),
    reply: z.discriminatedUnion('ok', [
      z.object({
        ok: z.literal(true),
        conversationId: z.string(),
        startedAt: z.string(),
        agent: callAgentSchema,
        caller: callerSchema,
      }),
      z.object({ ok: z.literal(false), code: z.enum(['agent-not-found', 'agent-inactive', 'tenant-suspended', 'stream-unauthenticated', 'call-ended', 'call-in-progress', 'call-id-conflict']), message: z.string() }),
    ]),
  },
  /**
   * A live call's user turn asks for the best knowledge-base passages of the agent's
   * documents (RAG). Only the tenant's `indexed` documents that are both in `documentIds`
   * and assigned to the agent are searched; the passages' text adds up to at most `maxChars`.
   */
  /**
   * A call ended: the gateway's end record ({@link sessionEndRecordSchema}). The control plane
   * answers once the record is stored (a duplicate or an unknown conversation is answered too:
   * retrying would change nothing); the gateway retries until one does, so a database outage or a
   * control-plane restart does not lose the call's transcript, cost and status.
   */
  callEnd: {
    subject: 'call.end',
    request: sessionEndRecordSchema,
    reply: z.object({ ok: z.literal(true) }),
  },
  knowledgeRetrieve: {
    subject: 'knowledge.retrieve',
    request: z.object({
      tenantId: z.string(),
      agentId: z.string(),
      conversationId: z.string(),
      documentIds: z.array(z.string()).max(50),
      query: z.string().max(4000),
      topK: z.number().int().min(1).max(20),
      maxChars: z.number().int().min(1).max(50_000),
    }),
    reply: z.discriminatedUnion('ok', [
      z.object({
        ok: z.literal(true),
        /** Best first. */
        passages: z.array(
          z.object({
            documentId: z.string(),
            documentName: z.string(),
            chunkId: z.string(),
            /** The index's hybrid score, 0..1. */
            score: z.number(),
            text: z.string(),
            pageNumber: z.number().int().nullable(),
          }),
        ),
        /** Embedding + search time on the responder. */
        tookMs: z.number().int().min(0),
      }),
      z.object({ ok: z.literal(false), code: z.enum(['embedding_failed', 'search_failed']), message: z.string() }),
    ]),
  },
} as const;

export type RequestName = keyof typeof REQUESTS;
export type RequestPayload<R extends RequestName> = z.infer<(typeof REQUESTS)[R]['request']>;
export type ReplyPayload<R extends RequestName> = z.infer<(typeof REQUESTS)[R]['reply']>;
