// Carrier simulators for tests, the sandbox call command and load tests.
export { TwilioCallerSimulator, StreamRefusedError, twilioSid } from './simulators/twilio-caller.js';
export type { TwilioCallerOptions, PlaceCallOptions, PlacedCall, PlayedChunk } from './simulators/twilio-caller.js';
export { runCallerScript } from './simulators/scripted-caller.js';
export type { CallerStep, CallerTurnTiming, ScriptOptions } from './simulators/scripted-caller.js';
