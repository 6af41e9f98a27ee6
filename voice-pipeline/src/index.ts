/**
 * The streaming STT → LLM → TTS pipeline: typed frames through processors, provider
 * adapters and their simulators. Built by the voice-loop issue (#4); until then this
 * package only fixes its place in the workspace and its dependency direction (→ shared).
 */
export const VOICE_PIPELINE_PACKAGE = '@vap/voice-pipeline';
