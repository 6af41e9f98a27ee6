// Protocol-faithful provider simulators: tests, sandbox mode and load tests share them.
export { DeepgramSimulator } from './providers/deepgram/simulator.js';
export { OpenAiSimulator } from './providers/openai/simulator.js';
export { ElevenLabsSimulator } from './providers/elevenlabs/simulator.js';
