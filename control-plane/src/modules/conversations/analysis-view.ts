import { sql } from 'drizzle-orm';
import { AppError } from '@vap/shared';
import type { Db } from '../../db/database.js';
import type { JobStatus } from '../../db/schema/jobs.js';
import { ANALYSIS_JOB, hasUserMessage } from './analysis-job.js';
import type { ConversationRow } from './repository.js';
import type { AnalysisSummaryView, AnalysisView } from './schemas.js';

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const SENTIMENTS = ['positive', 'neutral', 'negative'] as const;
const sentimentOf = (v: unknown): AnalysisSummaryView['sentiment'] => SENTIMENTS.find((s) => s === v) ?? null;
const customFieldsOf = (v: unknown): Record<string, string | null> =>
  typeof v === 'object' && v !== null ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, str(x)])) : {};

/** The conversation's `analysis` (the spec's summary fields) from the stored Analysis. */
export function analysisSummaryOf(stored: Record<string, unknown>): AnalysisSummaryView {
  return { sentiment: sentimentOf(stored.sentiment), sentimentScore: num(stored.sentimentScore), intent: str(stored.intent), summary: str(stored.summary), customFields: customFieldsOf(stored.customFields) };
}

/** The spec's Analysis from the stored one. */
export function analysisViewOf(stored: Record<string, unknown>, conversationId: string): AnalysisView {
  const b = stored.sentimentBreakdown as { agent?: unknown; user?: unknown } | null | undefined;
  const agent = num(b?.agent);
  const user = num(b?.user);
  return {
    conversationId,
    completedAt: str(stored.completedAt) ?? '',
    ...analysisSummaryOf(stored),
    sentimentBreakdown: agent !== null && user !== null ? { agent, user } : null,
    entities: Array.isArray(stored.entities) ? (stored.entities as { type: string; value: string }[]) : null,
    topics: Array.isArray(stored.topics) ? (stored.topics as string[]) : null,
    callQualityScore: num(stored.callQualityScore),
    agentPerformanceNotes: str(stored.agentPerformanceNotes),
  };
}

/**
 * `GET …/analysis`: the stored analysis, or why there is none. 409 `invalid-state` while
 * the call is in progress or its analysis job is pending or running; 404
 * `analysis-not-found` when there will be none, the detail saying why (not enabled for the
 * call's agent version, nothing the caller said, no end record, failed for good).
 */
export async function readAnalysis(db: Pick<Db, 'execute'>, row: ConversationRow): Promise<AnalysisView> {
  if (row.analysis) return analysisViewOf(row.analysis, row.id);
  const id = row.id;
  if (row.status === 'in_progress') throw new AppError('invalid-state', `Conversation ${id} is still in progress; it is analysed after it ends.`);
  const job = (await db.execute<{ status: JobStatus; attempts: number }>(sql`select status, attempts from jobs where kind = ${ANALYSIS_JOB} and subject_id = ${id}`)).rows[0];
  if (job?.status === 'pending' || job?.status === 'running') {
    throw new AppError('invalid-state', `The analysis of conversation ${id} is ${job.status === 'pending' ? 'queued' : 'running'}${job.attempts > 0 && job.status === 'pending' ? ` (attempt ${job.attempts} failed; it is retried)` : ''}. Try again shortly, or subscribe to AnalysisCompleted.`);
  }
  if (job?.status === 'failed') throw new AppError('analysis-not-found', `The analysis of conversation ${id} failed for good after ${job.attempts} attempt(s).`);
  if (job) throw new AppError('analysis-not-found', `Conversation ${id} has no analysis: it was deleted or is being deleted.`);
  const enabled = await db.execute<{ enabled: string | null }>(sql`
    select coalesce((select snapshot from agent_versions where agent_id = ${row.agentId} and version = ${row.agentVersion}),
                    (select config from agents where id = ${row.agentId})) -> 'analysisConfig' ->> 'enabled' as enabled`);
  if (enabled.rows[0]?.enabled !== 'true') throw new AppError('analysis-not-found', `Analysis was not enabled (analysisConfig.enabled) for the agent version that handled conversation ${id}.`);
  if (!(await hasUserMessage(db, id))) throw new AppError('analysis-not-found', `Conversation ${id} has nothing to analyse: the caller said nothing.`);
  throw new AppError('analysis-not-found', `Conversation ${id} was not analysed: it ended without its media gateway's end record (${row.endReason ?? 'unknown end'}).`);
}
