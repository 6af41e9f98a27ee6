import { AppError, validationError } from '@vap/shared';
import type { ObjectStore } from '@vap/shared';
import { toPage } from '../../http/pagination.js';
import type { Principal } from '../auth/principal.js';
import { analysisSummaryOf, readAnalysis } from './analysis-view.js';
import { callerOf, costSummaryOf } from './events.js';
import { latencyViewOf } from './latency-view.js';
import { deleteRecordingObject } from './recording-retention.js';
import type { ConversationRepository, ConversationRow } from './repository.js';
import { MAX_TAGS, dateRange } from './schemas.js';
import type { AgentStatsQuery, AgentStatsView, AnalysisView, ConversationView, CostsView, LatencyView, ListConversationsQuery, MessagesView, OUTCOMES, TranscriptView } from './schemas.js';

function notFound(id: string): AppError {
  return new AppError('conversation-not-found', `Conversation ${id} was not found.`);
}

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
/** Whole seconds, as every `durationSeconds` of the API (the gateway stores recordings' to 0.01 s). */
const seconds = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : null);

/**
 * Reading conversations. Every method takes the calling principal and sees only its
 * tenant: another tenant's conversation is "not found", like a missing one.
 */
export class ConversationService {
  /** @param deps.recordings where recording objects live; without one, a conversation with a recording cannot be deleted. */
  constructor(private readonly deps: { repo: ConversationRepository; recordings?: ObjectStore; now?: () => number }) {}

  /**
   * Deletes a conversation permanently (see `ConversationRepository.deleteConversation`):
   * messages, transcript, analysis, webhook events and the recording object are gone; its
   * billing usage stays in the anonymous aggregate. 409 while the call is in progress.
   */
  async delete(p: Principal, id: string): Promise<void> {
    // Nothing is deleted when the store cannot delete the object (503): the caller retries.
    const result = await this.deps.repo.deleteConversation(p.tenantId, id, (key) => deleteRecordingObject(this.deps.recordings, key));
    if (result.kind === 'not-found') throw notFound(id);
    if (result.kind === 'in-progress') throw new AppError('invalid-state', `Conversation ${id} is still in progress; end the call before deleting it.`);
  }

  /** Statistics of an agent's conversations (the list's rows for the same agent and dates). */
  async agentStats(p: Principal, agentId: string, q: AgentStatsQuery): Promise<AgentStatsView> {
    const today = new Date((this.deps.now ?? Date.now)()).toISOString().slice(0, 10);
    const dateTo = q.dateTo ?? today;
    const dateFrom = q.dateFrom ?? new Date(dateRange(undefined, dateTo).to!.getTime() - 29 * 86_400_000).toISOString().slice(0, 10);
    const s = await this.deps.repo.agentStats(p.tenantId, agentId, { dateFrom, dateTo });
    if (!s) throw new AppError('not-found', `Agent ${agentId} was not found.`);
    return {
      agentId,
      period: { from: dateFrom, to: dateTo },
      totalConversations: s.total,
      totalDurationSeconds: s.totalDurationSeconds,
      avgDurationSeconds: Math.round(s.avgDurationSeconds ?? 0),
      totalCostUsd: round6(s.totalCostUsd),
      avgCostUsdPerConversation: round6(s.avgCostUsd ?? 0),
      channelBreakdown: s.byChannel ?? {},
      outcomeBreakdown: s.byOutcome ?? {},
      avgSentimentScore: s.avgSentimentScore === null ? null : Math.round(s.avgSentimentScore * 1000) / 1000,
    };
  }

  async list(p: Principal, q: ListConversationsQuery) {
    const { rows, total } = await this.deps.repo.list(p.tenantId, q);
    return toPage(rows.map(view), total, q);
  }

  /** Adds tags, de-duplicated; answers the conversation's tags. */
  async addTags(p: Principal, id: string, tags: string[]): Promise<{ conversationId: string; tags: string[] }> {
    const result = await this.deps.repo.addTags(p.tenantId, id, tags.map((t) => t.trim()), MAX_TAGS);
    if (result === undefined) throw notFound(id);
    if (result === 'too-many') throw validationError('tags', `a conversation carries at most ${MAX_TAGS} tags`);
    return { conversationId: id, tags: result };
  }

  /** Sets (replaces) the outcome and its notes. */
  async setOutcome(p: Principal, id: string, outcome: (typeof OUTCOMES)[number], notes: string | null | undefined) {
    const row = await this.deps.repo.setOutcome(p.tenantId, id, outcome, notes ?? null);
    if (!row) throw notFound(id);
    return { conversationId: row.id, outcome, notes: row.outcomeNotes };
  }

  async get(p: Principal, id: string): Promise<ConversationView> {
    return view(await this.load(p, id));
  }

  /** Messages in conversation order (`seq`), without word timing. */
  async messages(p: Principal, id: string): Promise<MessagesView> {
    const row = await this.load(p, id);
    const rows = await this.deps.repo.messages(row.id);
    return {
      conversationId: row.id,
      messages: rows.map((m) => ({ id: m.id, role: m.role, content: m.content, timestamp: m.timestamp.toISOString(), durationMs: m.durationMs, interrupted: m.interrupted })),
    };
  }

  async transcript(p: Principal, id: string): Promise<TranscriptView> {
    const row = await this.load(p, id);
    const turns = await this.deps.repo.turns(row.id);
    return {
      conversationId: row.id,
      language: row.language,
      durationSeconds: row.durationSeconds,
      turns: turns.map((t) => ({ id: t.id, speaker: t.speaker, text: t.text, startTime: t.startTime, endTime: t.endTime, confidence: t.confidence, words: t.words })),
    };
  }

  /** Costs exist once the gateway's end record priced the call; before that, 409. */
  async costs(p: Principal, id: string): Promise<CostsView> {
    const row = await this.load(p, id);
    const c = row.costs;
    if (!c) {
      throw new AppError(
        'invalid-state',
        row.status === 'in_progress'
          ? `Conversation ${id} is still in progress; costs are computed when it ends.`
          : `Conversation ${id} ended without a usage report (its media gateway was lost), so it has no costs.`,
      );
    }
    return { conversationId: row.id, currency: c.currency, total: c.total, breakdown: { llm: c.llm, tts: c.tts, stt: c.stt, telephony: c.telephony } };
  }

  /**
   * Where the time of each agent reply went, from the gateway's end record; 409 while the
   * call is in progress, or when it ended without one (gateway lost).
   */
  async latency(p: Principal, id: string): Promise<LatencyView> {
    const row = await this.load(p, id);
    if (!row.turnMetrics) {
      throw new AppError(
        'invalid-state',
        row.status === 'in_progress'
          ? `Conversation ${id} is still in progress; its latency is stored when it ends.`
          : `Conversation ${id} ended without a report from its media gateway, so it has no latency breakdown.`,
      );
    }
    return latencyViewOf(row.id, row.turnMetrics);
  }

  /** The post-call analysis (spec "Analysis"); 409 while pending or running, 404 `analysis-not-found` when there is none (the detail says why). */
  async analysis(p: Principal, id: string): Promise<AnalysisView> {
    return readAnalysis(this.deps.repo.executor, await this.load(p, id));
  }

  private async load(p: Principal, id: string): Promise<ConversationRow> {
    const row = await this.deps.repo.find(p.tenantId, id);
    if (!row) throw notFound(id);
    return row;
  }
}

function view(row: ConversationRow): ConversationView {
  const rec = row.recording;
  return {
    id: row.id,
    agentId: row.agentId,
    agentName: row.agentName,
    channel: row.channel as ConversationView['channel'],
    status: row.status,
    direction: row.direction as ConversationView['direction'],
    startedAt: row.startedAt.toISOString(),
    endedAt: row.endedAt?.toISOString() ?? null,
    durationSeconds: row.durationSeconds,
    endReason: row.endReason,
    caller: callerOf(row),
    metadata: row.metadata,
    cost: costSummaryOf(row),
    analysis: row.analysis ? analysisSummaryOf(row.analysis) : null,
    // Recordings arrive with the recording issue; until then none is available.
    recording: rec
      ? { available: rec.available === true, durationSeconds: seconds(rec.durationSeconds), format: str(rec.format), expiresAt: str(rec.expiresAt) }
      : { available: false, durationSeconds: null, format: null, expiresAt: null },
    tags: row.tags,
    outcome: row.outcome,
    outcomeNotes: row.outcomeNotes,
  };
}
