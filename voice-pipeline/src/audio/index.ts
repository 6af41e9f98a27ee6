/** Audio helpers of the voice pipeline: G.711, PCM16, WAV, resampling, framing, VAD, test speech. */
export { mulawEncode, mulawDecode, mulawLevelDbfs, alawEncode, alawDecode, MULAW_SILENCE, ALAW_SILENCE } from './g711.js';
export { pcm16FromBytesLE, pcm16ToBytesLE, levelDbfs, concatInt16, concatBytes, SILENCE_DBFS } from './pcm.js';
export { parseWav, encodeWav, type WavAudio } from './wav.js';
export { Resampler, resample } from './resampler.js';
export {
  synthesizeSpeech,
  synthesizeSpeechWithSource,
  toneSpeech,
  hasEspeak,
  estimateSpeechMs,
  type SpeechSource,
  type SynthesizedSpeech,
} from './synth.js';
export {
  callerSpeechMulaw,
  callerSpeechMulawWithSource,
  coughMulaw,
  silenceMulaw,
  speechFixtureSlug,
  readSpeechFixture,
  SPEECH_FIXTURES_DIR,
  CALLER_SAMPLE_RATE_HZ,
  type CallerSpeechDeps,
  type CallerSpeechSource,
} from './caller-speech.js';
export { FIXTURE_CALLER_LINES } from './caller-lines.js';
export { Framer, FRAME_MS, MULAW_FRAME_BYTES } from './framer.js';
export { EnergyVad, type EnergyVadOptions, type VadDecision } from './vad.js';
