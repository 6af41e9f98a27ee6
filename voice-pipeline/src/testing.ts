// Test helpers shared with other packages.
/** The turn detector alone: the gateway's own barge-in watch is tested to decide as it does (media-gateway early-barge-in). */
export { TurnDetector } from './processors/turn-detector.js';
export type { Frame } from './frames.js';
