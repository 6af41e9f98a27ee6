import type { TwilioCallerSimulator } from './twilio-caller.js';

/** What a script needs of a simulated call: the Twilio and the Vonage caller both provide it. */
export type ScriptedCall = Pick<TwilioCallerSimulator, 'closed' | 'say' | 'pressDigit' | 'clears' | 'agentAudio' | 'playbackQueuedMs' | 'firstAgentAudioAfter'>;

/** One step of a simulated caller's conversation. */
export type CallerStep =
  /** Wait until the agent has spoken (audio after the caller's last speech) and gone quiet. */
  | { expectAgent: true; timeoutMs?: number }
  /** Speak, then carry on (the agent's answer is awaited by a following `expectAgent`). */
  | { say: string }
  /** Wait for the agent to start speaking, then talk over it after `afterMs` (barge-in). */
  | { sayOverAgent: string; afterMs: number }
  | { press: string }
  | { wait: number }
  /** Stay silent until the agent hangs up. */
  | { expectHangup: true; timeoutMs?: number };

/** What the caller measured for one thing it said. */
export interface CallerTurnTiming {
  said: string;
  /** performance.now() ms when the caller's speech ended. */
  speechEndedAt: number;
  /** When the agent's next audio started playing at the caller, or null. */
  firstAgentAudioAt: number | null;
  /** speechEndedAt → firstAgentAudioAt. */
  latencyMs: number | null;
  /** For a barge-in: caller speech onset → agent audio cleared ({@link clearedAt}). */
  bargeInReactionMs?: number | null;
  /**
   * For a barge-in: when the agent's audio was cleared at the caller: the carrier's `clear`
   * arrived, or, on a carrier without one (Vonage), the audio playing at the onset stopped.
   * Null when neither happened while the caller spoke.
   */
  clearedAt?: number | null;
}

export interface ScriptOptions {
  /** μ-law 8 kHz audio for a line (espeak-ng speech, a fixture, or tone speech). */
  speech: (text: string) => Promise<Uint8Array>;
  /** The agent counts as done after this much silence at the caller (default 900 ms). */
  quietMs?: number;
  onStep?: (step: CallerStep, index: number) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Played frames closer than this count as one stretch of audio (timer jitter between 20 ms frames). */
const CONTIGUOUS_MS = 30;

/**
 * Without a carrier `clear`: when the agent audio that was playing at `onset` stopped at the
 * caller (the end of that stretch of played frames), if it stopped before `until`.
 */
function audioStoppedAt(played: readonly { startedAt: number; endedAt: number }[], onset: number, until: number): number | undefined {
  let end: number | undefined;
  for (const c of played) {
    if (c.endedAt <= onset) continue;
    if (c.startedAt > (end ?? onset) + CONTIGUOUS_MS) break;
    end = c.endedAt;
  }
  return end !== undefined && end < until ? end : undefined;
}

/**
 * Plays a scripted conversation on a simulated call (Twilio, Telnyx or Vonage): the same script drives the
 * end-to-end tests, the sandbox call command and the load generator.
 */
export async function runCallerScript(call: ScriptedCall, steps: CallerStep[], opts: ScriptOptions): Promise<CallerTurnTiming[]> {
  const quietMs = opts.quietMs ?? 900;
  const timings: CallerTurnTiming[] = [];
  let lastSpeechEnd = performance.now() - 1;
  let hungUp = false;
  void call.closed.then(() => (hungUp = true));

  const agentStarted = async (since: number, timeoutMs: number): Promise<number> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const at = call.firstAgentAudioAfter(since);
      if (at !== null) return at;
      if (hungUp) throw new Error('the call ended while waiting for the agent');
      if (performance.now() > deadline) throw new Error(`the agent did not speak within ${timeoutMs} ms`);
      await sleep(20);
    }
  };
  const agentQuiet = async (timeoutMs: number): Promise<void> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const last = call.agentAudio[call.agentAudio.length - 1];
      const quietFor = performance.now() - (last?.endedAt ?? 0);
      if (call.playbackQueuedMs === 0 && quietFor >= quietMs) return;
      if (hungUp) return;
      if (performance.now() > deadline) throw new Error(`the agent did not go quiet within ${timeoutMs} ms`);
      await sleep(20);
    }
  };

  for (const [i, step] of steps.entries()) {
    opts.onStep?.(step, i);
    if ('expectAgent' in step) {
      await agentStarted(lastSpeechEnd, step.timeoutMs ?? 15_000);
      await agentQuiet(step.timeoutMs ?? 30_000);
    } else if ('say' in step) {
      const audio = await opts.speech(step.say);
      const { endedAt } = await call.say(audio);
      lastSpeechEnd = endedAt;
      timings.push({ said: step.say, speechEndedAt: endedAt, firstAgentAudioAt: null, latencyMs: null });
    } else if ('sayOverAgent' in step) {
      const audio = await opts.speech(step.sayOverAgent);
      await agentStarted(lastSpeechEnd, 15_000);
      await sleep(step.afterMs);
      const clearsBefore = call.clears.length;
      const { startedAt, endedAt } = await call.say(audio);
      lastSpeechEnd = endedAt;
      const clearAt = call.clears[clearsBefore] ?? audioStoppedAt(call.agentAudio, startedAt, endedAt) ?? null;
      timings.push({ said: step.sayOverAgent, speechEndedAt: endedAt, firstAgentAudioAt: null, latencyMs: null, bargeInReactionMs: clearAt === null ? null : Math.round(clearAt - startedAt), clearedAt: clearAt });
    } else if ('press' in step) {
      for (const d of step.press) {
        call.pressDigit(d);
        await sleep(120);
      }
      lastSpeechEnd = performance.now();
      timings.push({ said: `[DTMF] ${step.press}`, speechEndedAt: lastSpeechEnd, firstAgentAudioAt: null, latencyMs: null });
    } else if ('wait' in step) {
      await sleep(step.wait);
    } else {
      await Promise.race([call.closed, sleep(step.timeoutMs ?? 30_000).then(() => Promise.reject(new Error('the agent did not hang up')))]);
    }
  }
  for (const t of timings) {
    t.firstAgentAudioAt = call.firstAgentAudioAfter(t.speechEndedAt);
    t.latencyMs = t.firstAgentAudioAt === null ? null : Math.round(t.firstAgentAudioAt - t.speechEndedAt);
  }
  return timings;
}
