// Carrier simulators for tests, the sandbox call command and load tests.
export { TwilioCallerSimulator, StreamRefusedError, twilioSid } from './simulators/twilio-caller.js';
export type { TwilioCallerOptions, PlaceCallOptions, PlacedCall, PlayedChunk } from './simulators/twilio-caller.js';
export { TelnyxCallerSimulator, telnyxCallControlId } from './simulators/telnyx-caller.js';
export type { TelnyxCallerOptions, PlaceTelnyxCallOptions, PlacedTelnyxCall } from './simulators/telnyx-caller.js';
export { VonageCallerSimulator } from './simulators/vonage-caller.js';
export type { VonageCallerOptions, PlaceVonageCallOptions, PlacedVonageCall, VonageWebhookTarget, PostedEvent } from './simulators/vonage-caller.js';
export { runCallerScript } from './simulators/scripted-caller.js';
export type { CallerStep, CallerTurnTiming, ScriptOptions, ScriptedCall } from './simulators/scripted-caller.js';
