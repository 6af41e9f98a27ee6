/**
 * The streaming STT → LLM → TTS pipeline: typed frames through processors, the voice
 * session that runs one call, and the provider adapters.
 */
export * from './frames.js';
export * from './audio/index.js';
export { Pipeline } from './pipeline/pipeline.js';
export { Processor } from './pipeline/processor.js';
export type { Direction } from './pipeline/processor.js';
export { VoiceSession } from './session/voice-session.js';
export type { VoiceSessionOptions, SessionOutcome, SessionStatus } from './session/voice-session.js';
export type { RecordedMessage, RecordedTurn, Usage } from './session/call-record.js';
export { CallRecord } from './session/call-record.js';
export { renderTemplate, buildSystemPrompt } from './session/prompt.js';
export { KNOWLEDGE_HEADER, KNOWLEDGE_TOP_K, DEFAULT_KNOWLEDGE_MAX_CHARS, DEFAULT_RETRIEVAL_TIMEOUT_MS, knowledgeMessage, retrieveWithin, cutText } from './session/knowledge.js';
export type { KnowledgeOptions, KnowledgePassage } from './session/knowledge.js';
export type { AudioTransport } from './processors/audio-output.js';
export { BARGE_IN_RULES, meaningfulWords, stopAfterVoicedMs } from './processors/turn-detector.js';
export { ProviderError, isRetryableStatus } from './providers/provider-error.js';
export type * from './providers/types.js';
export { createCallProviders, resolveCallEndpoints } from './providers/registry.js';
export type { ProviderEndpoint, ProviderEndpoints, CallProviders, CallEndpoints } from './providers/registry.js';
export { startProviders } from './providers/sandbox.js';
export { ELEVENLABS_WEBSOCKETS } from './providers/elevenlabs/wire.js';
export type { ElevenLabsWebSocket } from './providers/elevenlabs/wire.js';
export type { ProviderKeys, ProviderRuntime } from './providers/sandbox.js';
export { withLlmRetry } from './providers/retry.js';
export { OpenAiLlm } from './providers/openai/llm.js';
export type { OpenAiLlmOptions } from './providers/openai/llm.js';
// The offline embedding the control plane's local embedder uses and the OpenAI simulator answers with.
export { hashEmbedding, HASH_EMBEDDING_DIMENSIONS, HASH_EMBEDDING_MODEL } from './providers/openai/hash-embedding.js';
// Post-call analysis (structured output through the same LLM adapters).
export * from './analysis/index.js';
