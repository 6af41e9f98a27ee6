/**
 * The conversation every simulated caller of `pnpm bench:calls` plays. The agent's answers
 * are short (a call lasts ~20 s) except the one the caller cuts off. Each line has a
 * committed speech fixture (voice-pipeline/src/audio/caller-lines.ts), so the calls sound
 * the same with or without espeak-ng. The LLM simulator answers by rule; the STT simulator
 * is told each call's lines in order.
 */
import type { CallerStep } from '@vap/media-gateway/simulators';

export const GREET = 'Hello, Harbour Bistro.';
export const BOOK = 'Hi, I would like to book a table for two tonight.';
export const HOURS = 'What are your opening hours?';
/** Said over the long answer to {@link HOURS}: the call's one barge-in. */
export const LOCATED = 'Actually, can you tell me where you are located?';
export const BYE = "Thanks, that's all. Goodbye.";

/** What the caller says, in order: also the STT simulator's transcripts of the call's speech segments. */
export const CALLER_LINES: readonly string[] = [BOOK, HOURS, LOCATED, BYE];

/**
 * The agent counts as done after this much silence at the caller, ms: above the pauses
 * between the agent's sentences, below the runner's default (900), to keep calls short.
 */
export const AGENT_QUIET_MS = 700;

/** How long the caller lets the long answer play before talking over it, ms. */
export const BARGE_IN_AFTER_MS = 600;

/** The LLM simulator's rules (body of `POST /__sim/replies`, or `addReply` in process): first match wins. */
export const LLM_REPLIES: readonly { match: { regex: string; flags: string }; reply: string }[] = [
  { match: { regex: 'book a table', flags: 'i' }, reply: 'Of course. What time?' },
  {
    match: { regex: 'opening hours', flags: 'i' },
    // Long on purpose: the next line cuts it off.
    reply:
      'We are open every day from eleven in the morning until ten at night, except on Mondays when we only open at five in the afternoon. ' +
      'On public holidays we keep the same hours as on Sundays, and the kitchen takes its last orders half an hour before closing.',
  },
  { match: { regex: 'where.*located', flags: 'i' }, reply: 'Twelve Harbour Street.' },
  { match: { regex: '\\b(good)?bye\\b', flags: 'i' }, reply: 'Goodbye!' },
];

/**
 * The call in groups of steps. Each group is one `runCallerScript` run, so the timings of
 * the groups already played are kept when a later one fails. The barge-in stays in the
 * group of the line it cuts off: it waits for that answer to start.
 */
export const CALL_STEP_GROUPS: readonly (readonly CallerStep[])[] = [
  [{ expectAgent: true }],
  [{ say: BOOK }, { expectAgent: true }],
  [{ say: HOURS }, { sayOverAgent: LOCATED, afterMs: BARGE_IN_AFTER_MS }, { expectAgent: true }],
  [{ say: BYE }, { expectAgent: true }],
];

/** The script as the report lists it: the caller's lines, the barge-in marked. */
export function scriptForReport(): string[] {
  return CALLER_LINES.map((line) => (line === LOCATED ? `${line} [barge-in after ${BARGE_IN_AFTER_MS} ms]` : line));
}
