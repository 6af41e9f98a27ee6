import type { StoredTurnMetrics } from '../../db/schema/conversations.js';
import { LATENCY_STAGES } from './schemas.js';
import type { LatencyView } from './schemas.js';

/**
 * Nearest-rank percentile (`p` in 0–100) of ascending `sorted`: the smallest value with at
 * least p% of the values at or below it. Always one of the values, never interpolated.
 */
export function nearestRank(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/**
 * A conversation's latency view from its stored per-turn metrics: the turns in call order
 * and a summary over their `totalMs`. `slowestStage` is the additive slice (endpointing,
 * retrieval, LLM first token, LLM first phrase, TTS first byte, overhead) with the largest sum over the call; a tie goes to
 * the earlier stage in that order. `sttMs` is not a candidate: it runs inside endpointing.
 */
export function latencyViewOf(conversationId: string, metrics: readonly StoredTurnMetrics[]): LatencyView {
  const turns = metrics.map((m) => ({
    turnId: m.turnId,
    endpointingMs: m.endpointingMs,
    sttMs: m.sttMs,
    retrievalMs: m.retrievalMs ?? 0,
    llmFirstTokenMs: m.llmFirstTokenMs,
    llmFirstPhraseMs: m.llmFirstPhraseMs ?? 0,
    ttsFirstByteMs: m.ttsFirstByteMs,
    overheadMs: m.overheadMs,
    totalMs: m.totalMs,
  }));
  const totals = turns.map((t) => t.totalMs).sort((a, b) => a - b);
  const sums = LATENCY_STAGES.map((stage) => turns.reduce((sum, t) => sum + t[`${stage}Ms`], 0));
  const slowest = sums.reduce((best, sum, i) => (sum > sums[best]! ? i : best), 0);
  return {
    conversationId,
    turns,
    summary: {
      turns: turns.length,
      p50TotalMs: nearestRank(totals, 50),
      p95TotalMs: nearestRank(totals, 95),
      maxTotalMs: totals.at(-1) ?? null,
      slowestStage: turns.length > 0 ? LATENCY_STAGES[slowest]! : null,
    },
  };
}
