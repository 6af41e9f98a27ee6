import { and, asc, eq, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { z } from 'zod';
import { agentConfigSchema } from '@vap/shared';
import type { Bus, PlatformEvent } from '@vap/shared';
import { ProviderError, analyseConversation } from '@vap/voice-pipeline';
import type { ConversationAnalysis } from '@vap/voice-pipeline';
import type { Db } from '../../db/database.js';
import { storableText } from '../../db/storable-text.js';
import { agentVersions } from '../../db/schema/agent-versions.js';
import { agents } from '../../db/schema/agents.js';
import { conversationMessages, conversations } from '../../db/schema/conversations.js';
import { enqueueJob } from '../jobs/job-queue.js';
import type { ClaimedJob } from '../jobs/job-queue.js';
import { PermanentJobError } from '../jobs/job-runner.js';
import type { EventOutbox } from '../webhooks/event-outbox.js';
import type { AnalysisLlms } from './analysis-llm.js';
import { buildEvent, publishEvent } from './events.js';
import type { ConversationRow, InTransaction } from './repository.js';

/** Job kind of a conversation's post-call analysis (subject: the conversation id). */
export const ANALYSIS_JOB = 'conversation.analysis';

/** Attempts of an analysis job: with the default backoff the last one runs about 13 minutes after the call. */
export const ANALYSIS_MAX_ATTEMPTS = 5;

/** The spec's Analysis as stored in `conversations.analysis`. */
export type StoredAnalysis = ConversationAnalysis & { conversationId: string; completedAt: string };

const analysisConfigSchema = agentConfigSchema.shape.analysisConfig;

/** What the job needs, fixed when the call ends: the agent may change or go before it runs. */
const payloadSchema = z.object({
  settings: analysisConfigSchema.unwrap().omit({ enabled: true }),
  llm: z.object({ provider: z.string(), model: z.string() }),
});
type AnalysisPayload = z.infer<typeof payloadSchema>;

type Tx = Parameters<InTransaction<ConversationRow>>[0];

/** The agent configuration a call ran with: its version's snapshot, else the agent's current one. */
export async function callAgentConfig(db: Pick<Db, 'select'>, row: Pick<ConversationRow, 'agentId' | 'agentVersion'>): Promise<{ analysisConfig: z.infer<typeof analysisConfigSchema>; llm: { provider: string; model: string } } | null> {
  const [version] = await db
    .select({ config: agentVersions.snapshot })
    .from(agentVersions)
    .where(and(eq(agentVersions.agentId, row.agentId), eq(agentVersions.version, row.agentVersion)));
  const config = version?.config ?? (await db.select({ config: agents.config }).from(agents).where(eq(agents.id, row.agentId)))[0]?.config;
  if (!config) return null;
  const analysis = analysisConfigSchema.safeParse(config.analysisConfig);
  const llm = z.object({ provider: z.string(), model: z.string() }).safeParse(config.llm);
  return analysis.success && llm.success ? { analysisConfig: analysis.data, llm: { provider: llm.data.provider, model: llm.data.model } } : null;
}

/** Whether the conversation has a caller message with words in it (nothing to analyse otherwise). */
export async function hasUserMessage(db: Pick<Db, 'execute'>, conversationId: string): Promise<boolean> {
  const res = await db.execute<{ found: boolean }>(sql`select exists (select 1 from conversation_messages where conversation_id = ${conversationId} and role = 'user' and btrim(content) <> '') as found`);
  return res.rows[0]?.found === true;
}

/**
 * The `CallService.onFinished` hook: in the transaction that stores a call's end record,
 * enqueues its analysis when the call's agent has `analysisConfig.enabled` and the caller
 * said something. The job therefore exists exactly when the call's data does.
 */
export const enqueueAnalysis: InTransaction<ConversationRow> = async (tx: Tx, row) => {
  const config = await callAgentConfig(tx, row);
  if (!config?.analysisConfig.enabled) return;
  if (!(await hasUserMessage(tx, row.id))) return;
  const { enabled: _, ...settings } = config.analysisConfig;
  const payload: AnalysisPayload = { settings, llm: config.llm };
  await enqueueJob(tx, { kind: ANALYSIS_JOB, tenantId: row.tenantId, subjectId: row.id, payload, maxAttempts: ANALYSIS_MAX_ATTEMPTS });
};

/** `AnalysisCompleted` data (spec "Events"). */
export function analysisCompletedData(a: StoredAnalysis): Record<string, unknown> {
  return { conversationId: a.conversationId, sentiment: a.sentiment, sentimentScore: a.sentimentScore, intent: a.intent, summary: a.summary, customFields: a.customFields };
}

/**
 * Runs one analysis job: loads the conversation's messages, asks the LLM
 * (`analyseConversation`: structured output, repair, at most two retries), then in one
 * transaction writes `conversations.analysis` and stages `AnalysisCompleted` for webhooks;
 * after commit wakes the dispatcher and publishes the event on the bus. A conversation
 * deleted meanwhile, or already analysed (an attempt that ran again after its commit),
 * ends the job without doing anything. Provider failures are retried by the queue; a
 * non-retryable one (bad request, unsupported provider) fails the job at once.
 */
export class AnalysisJobHandler {
  constructor(private readonly deps: { db: Db; bus: Bus; outbox: EventOutbox; llms: AnalysisLlms; log: Logger; now?: () => number }) {}

  readonly handle = async (job: ClaimedJob, signal: AbortSignal): Promise<void> => {
    const { db, log: rootLog } = this.deps;
    const log = rootLog.child({ conversationId: job.subjectId, tenantId: job.tenantId, attempt: job.attempt });
    const parsed = payloadSchema.safeParse(job.payload);
    if (!parsed.success) throw new PermanentJobError(`analysis job payload is invalid: ${z.prettifyError(parsed.error)}`);
    const { settings, llm: llmConfig } = parsed.data;
    const [conv] = await db
      .select({ id: conversations.id, analysis: conversations.analysis })
      .from(conversations)
      .where(and(eq(conversations.id, job.subjectId), eq(conversations.tenantId, job.tenantId)));
    if (!conv || conv.analysis) {
      log.info(conv ? 'conversation already analysed' : 'conversation deleted before its analysis; nothing to do');
      return;
    }
    const messages = await db
      .select({ role: conversationMessages.role, content: conversationMessages.content })
      .from(conversationMessages)
      .where(eq(conversationMessages.conversationId, conv.id))
      .orderBy(asc(conversationMessages.seq));
    const { llm, model } = this.deps.llms.pick(llmConfig);
    let result: Awaited<ReturnType<typeof analyseConversation>>;
    try {
      result = await analyseConversation({ llm, model, settings, messages }, signal);
    } catch (err) {
      if (err instanceof ProviderError && !err.retryable) throw new PermanentJobError(`analysis LLM refused the request (${err.code})`, { cause: err });
      throw err;
    }

    const nowMs = (this.deps.now ?? Date.now)();
    // The LLM's words are kept even where it wrote a NUL or an unpaired surrogate (jsonb refuses both).
    const analysis: StoredAnalysis = storableText({ conversationId: conv.id, completedAt: new Date(nowMs).toISOString(), ...result.analysis });
    const event = await db.transaction(async (tx) => {
      const [row] = await tx.select().from(conversations).where(eq(conversations.id, conv.id)).for('update');
      if (!row || row.analysis) return null;
      await tx.update(conversations).set({ analysis, updatedAt: sql`now()` }).where(eq(conversations.id, conv.id));
      const e = buildEvent('AnalysisCompleted', row, analysisCompletedData(analysis), nowMs);
      await this.deps.outbox.stage(tx, e);
      return e;
    });
    if (!event) {
      log.info('conversation deleted or analysed meanwhile; result dropped');
      return;
    }
    log.info({ llmAttempts: result.attempts, droppedFields: result.dropped.map((p) => p.field), repairs: result.repairs.length, inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens }, 'conversation analysed');
    await this.announce(event, log);
  };

  private async announce(event: PlatformEvent, log: Logger): Promise<void> {
    this.deps.outbox.wake();
    try {
      await publishEvent(this.deps.bus, event);
    } catch (err) {
      // The analysis and its webhook deliveries are committed; a lost bus event must not rerun the job.
      log.error({ err, type: event.type }, 'platform event not published on the bus');
    }
  }
}
