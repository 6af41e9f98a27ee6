/** Post-call analysis: the structured-output schema, the prompt, validation with repair, and the ask-validate-retry loop. */
export { analyseConversation, ANALYSIS_MAX_RETRIES, ANALYSIS_MAX_TOKENS } from './analyse-conversation.js';
export type { AnalyseConversationInput, AnalysisResult } from './analyse-conversation.js';
export { buildAnalysisPrompt, retryPrompt, transcriptText, MAX_TRANSCRIPT_CHARS } from './analysis-prompt.js';
export type { AnalysisMessage } from './analysis-prompt.js';
export { ANALYSIS_PARTS, ANALYSIS_SCHEMA_NAME, QUALITY_SCORE_RANGE, SENTIMENTS, SENTIMENT_SCORE_RANGE, analysisJsonSchema, enabledAnalysisFields, sentimentOfScore } from './analysis-schema.js';
export type { AnalysisSettings, ConversationAnalysis, Sentiment } from './analysis-schema.js';
export { emptyAnalysis, validateAnalysis } from './validate-analysis.js';
export type { AnalysisProblem, AnalysisValidation } from './validate-analysis.js';
