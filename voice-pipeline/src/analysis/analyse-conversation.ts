import type { LlmMessage, LlmProvider } from '../providers/types.js';
import { buildAnalysisPrompt, retryPrompt } from './analysis-prompt.js';
import type { AnalysisMessage } from './analysis-prompt.js';
import { ANALYSIS_SCHEMA_NAME, analysisJsonSchema } from './analysis-schema.js';
import type { AnalysisSettings, ConversationAnalysis } from './analysis-schema.js';
import { validateAnalysis } from './validate-analysis.js';
import type { AnalysisProblem, AnalysisValidation } from './validate-analysis.js';

/** Default for {@link AnalyseConversationInput.maxRetries}. */
export const ANALYSIS_MAX_RETRIES = 2;
/** Default for {@link AnalyseConversationInput.maxTokens}: an analysis with long notes fits in well under 1,000. */
export const ANALYSIS_MAX_TOKENS = 1500;

export interface AnalyseConversationInput {
  llm: LlmProvider;
  model: string;
  settings: AnalysisSettings;
  /** The conversation in order; there should be at least one user message. */
  messages: readonly AnalysisMessage[];
  /** Further requests after a reply that breaks the schema, each stating its problems. Default 2. */
  maxRetries?: number;
  maxTokens?: number;
}

export interface AnalysisResult {
  /** Never invalid: what could not be repaired after the retries is null. */
  analysis: ConversationAnalysis;
  /** LLM requests made (1 + retries used). */
  attempts: number;
  /** Problems of the reply used, whose fields were dropped (empty when it was valid). */
  dropped: AnalysisProblem[];
  /** Repairs applied to the reply used. */
  repairs: string[];
  usage: { inputTokens: number; outputTokens: number };
}

/**
 * Asks the model for an analysis with structured output, validates and repairs the reply,
 * and asks again (the bad reply and its problems added to the conversation) at most
 * `maxRetries` times. If no reply is fully valid, the one with the fewest problems is used
 * with its invalid fields null, so nothing invalid is ever returned.
 *
 * Provider failures (after the provider's own retry wrapper, if any) reject with its
 * `ProviderError`: a durable job retries later. Aborting `signal` cancels the request in
 * flight and rejects with an `AbortError`; the caller owns the signal.
 */
export async function analyseConversation(input: AnalyseConversationInput, signal: AbortSignal): Promise<AnalysisResult> {
  const maxRetries = Math.max(0, input.maxRetries ?? ANALYSIS_MAX_RETRIES);
  const conversation: LlmMessage[] = buildAnalysisPrompt(input.messages, input.settings);
  const schema = analysisJsonSchema(input.settings);
  const usage = { inputTokens: 0, outputTokens: 0 };
  let best: AnalysisValidation | null = null;
  let attempts = 0;
  for (;;) {
    attempts++;
    let text = '';
    let truncated = false;
    for await (const event of input.llm.stream(
      { model: input.model, messages: conversation, temperature: 0, maxTokens: input.maxTokens ?? ANALYSIS_MAX_TOKENS, responseFormat: { name: ANALYSIS_SCHEMA_NAME, schema } },
      signal,
    )) {
      if (event.type === 'text') text += event.text;
      else if (event.type === 'usage') {
        usage.inputTokens += event.inputTokens;
        usage.outputTokens += event.outputTokens;
      } else if (event.type === 'done') truncated = event.finishReason === 'length';
    }
    const checked = validateAnalysis(text, input.settings);
    if (truncated && !checked.ok) checked.problems.push({ field: '', message: 'the reply was cut off at the token limit; keep the texts shorter' });
    // Ties go to the later reply: it answered the problems of the earlier one.
    if (!best || checked.problems.length <= best.problems.length) best = checked;
    if (checked.ok || attempts > maxRetries) break;
    conversation.push({ role: 'assistant', content: text }, { role: 'user', content: retryPrompt(checked.problems) });
  }
  return { analysis: best.value, attempts, dropped: best.problems, repairs: best.repairs, usage };
}
