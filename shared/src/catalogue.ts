/** Provider and model values of the spec ("Allowed provider values", "Model identifiers"). */
export const VOICE_PROVIDERS = ['elevenlabs', 'google', 'aws', 'azure'] as const;
export const LLM_PROVIDERS = ['openai', 'anthropic', 'google', 'cohere', 'huggingface'] as const;
export const STT_PROVIDERS = ['deepgram', 'assemblyai', 'google', 'aws', 'azure'] as const;

export type VoiceProvider = (typeof VOICE_PROVIDERS)[number];
export type LlmProvider = (typeof LLM_PROVIDERS)[number];
export type SttProvider = (typeof STT_PROVIDERS)[number];

/** LLM models per provider; `huggingface` serves any model name from its own endpoint. */
export const LLM_MODELS: Record<Exclude<LlmProvider, 'huggingface'>, readonly string[]> = {
  openai: ['gpt-4o', 'gpt-4o-mini', 'gpt-4-turbo', 'gpt-3.5-turbo'],
  anthropic: ['claude-3-5-sonnet-20241022', 'claude-3-5-haiku-20241022', 'claude-3-opus-20240229', 'claude-3-sonnet-20240229', 'claude-3-haiku-20240307'],
  google: ['gemini-1.5-pro', 'gemini-1.5-flash', 'gemini-1.0-pro'],
  cohere: ['command-r-plus', 'command-r'],
};

export const STT_MODELS: Record<SttProvider, readonly string[]> = {
  deepgram: ['nova-2', 'nova-2-medical', 'enhanced', 'base'],
  assemblyai: ['best', 'nano'],
  google: ['latest_long', 'latest_short', 'medical_conversation'],
  aws: ['standard', 'medical'],
  azure: ['standard', 'custom'],
};
