/**
 * The conversation the sandbox call plays: a short restaurant booking. The caller's lines
 * all have committed speech fixtures (voice-pipeline/src/audio/caller-lines.ts), so the
 * call sounds the same on machines without espeak-ng. When the simulators stand in for
 * the providers, the STT simulator is told what each of the caller's speech segments says
 * and the LLM simulator what to answer.
 */
import type { CallerStep } from '@vap/media-gateway/simulators';
import { isSilentMulaw } from '../../media-gateway/src/simulators/caller-playback.js';

/** One exchange: what the caller says, and what the (simulated) LLM answers to it. */
export interface ScriptedTurn {
  /** The caller's line; also the STT simulator's transcript of that speech segment. */
  say: string;
  /**
   * Regular expression (source, matched case-insensitively) the LLM simulator tests on the
   * caller's last message. A phrase rather than the exact line, so it holds with a live STT.
   */
  match: string;
  /** The scripted LLM reply. */
  reply: string;
  /** The caller starts this line while the agent is still answering the previous one. */
  interrupts?: boolean;
}

/** The whole booking, in order. The second reply is long on purpose: the third line cuts it off. */
export const BOOKING_CONVERSATION: readonly ScriptedTurn[] = [
  {
    say: 'Hi, I would like to book a table for two tonight.',
    match: 'book a table',
    reply: 'Of course, I can book a table for two tonight. What time would you like to come?',
  },
  {
    say: 'What are your opening hours?',
    match: 'opening hours',
    reply:
      'We are open every day from eleven in the morning until ten at night, except on Mondays when we only open at five in the afternoon. ' +
      'On public holidays we keep the same hours as on Sundays, the kitchen takes its last orders half an hour before closing, ' +
      'and on Friday and Saturday evenings we recommend booking at least a day ahead because the terrace fills up quickly.',
  },
  {
    say: 'Actually, can you tell me where you are located?',
    match: 'where.*located',
    reply: 'We are at twelve Harbour Street, next to the ferry terminal. What time shall I book your table for?',
    interrupts: true,
  },
  {
    say: "Seven o'clock works for me.",
    match: "(seven|7)\\b.*(o.?clock|works)",
    reply: 'Perfect, a table for two at seven tonight is booked. Is there anything else I can help you with?',
  },
  {
    say: "Thanks, that's all. Goodbye.",
    match: '\\b(good)?bye\\b',
    // "goodbye" is the sandbox receptionist's end-call phrase: the agent hangs up after saying it.
    reply: 'You are welcome, see you tonight. Goodbye!',
  },
];

/** How long the caller lets the agent talk before cutting in, ms (the long reply lasts ~20 s). */
export const BARGE_IN_AFTER_MS = 1500;

/**
 * The caller's steps. With the scripted LLM the agent says goodbye and hangs up; a live
 * LLM may not, so then the caller waits for its last answer and hangs up itself.
 */
export function callerSteps(turns: readonly ScriptedTurn[], llmScripted: boolean): CallerStep[] {
  const steps: CallerStep[] = [{ expectAgent: true }];
  turns.forEach((turn, i) => {
    if (turn.interrupts) steps.push({ sayOverAgent: turn.say, afterMs: BARGE_IN_AFTER_MS });
    else steps.push({ say: turn.say });
    const last = i === turns.length - 1;
    // The line before an interruption is followed by the interruption, not by a wait.
    if (!turns[i + 1]?.interrupts && !(last && llmScripted)) steps.push({ expectAgent: true });
  });
  if (llmScripted) steps.push({ expectHangup: true, timeoutMs: 30_000 });
  return steps;
}

/** Body of the Deepgram simulator's `POST /__sim/script`: one utterance per caller speech segment. */
export function sttScript(callSid: string, turns: readonly ScriptedTurn[]): { callKey: string; utterances: string[] } {
  return { callKey: callSid, utterances: turns.map((t) => t.say) };
}

/**
 * Body of the OpenAI simulator's `POST /__sim/replies`. The simulator keeps its rules until
 * it restarts (first match wins); identical rules left by earlier runs give the same
 * replies to the same lines, so running the call again is harmless.
 */
export function llmReplies(turns: readonly ScriptedTurn[]): { match: { regex: string; flags: string }; reply: string }[] {
  return turns.map((t) => ({ match: { regex: t.match, flags: 'i' }, reply: t.reply }));
}

const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law

/**
 * The clip without its leading and trailing silence (whole 20 ms frames below the caller's
 * audibility level). espeak-ng ends every clip with ~320 ms of silence; left in, the caller
 * would count it as speech and its "end of speech → first agent audio" would be that much
 * shorter than the truth. Trimmed, the simulated line keeps sending silence after the last
 * word, as a real phone line does, and the clock starts at the last audible frame.
 */
export function speechOnly(mulaw: Uint8Array): Uint8Array {
  const frames = Math.ceil(mulaw.byteLength / FRAME_BYTES);
  const silent = (i: number) => isSilentMulaw(mulaw.subarray(i * FRAME_BYTES, (i + 1) * FRAME_BYTES));
  let first = 0;
  while (first < frames && silent(first)) first++;
  let last = frames - 1;
  while (last >= first && silent(last)) last--;
  return last < first ? mulaw : mulaw.subarray(first * FRAME_BYTES, Math.min(mulaw.byteLength, (last + 1) * FRAME_BYTES));
}
