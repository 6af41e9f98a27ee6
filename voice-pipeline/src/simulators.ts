// Protocol-faithful provider simulators: tests, sandbox mode and load tests share them.
export { DeepgramSimulator } from './providers/deepgram/simulator.js';
export { DEFAULT_TUNING, type SimTranscriberTuning } from './providers/deepgram/sim-transcriber.js';
export { OpenAiSimulator } from './providers/openai/simulator.js';
export { ElevenLabsSimulator } from './providers/elevenlabs/simulator.js';
