/**
 * Barge-in on the gateway's event loop. A call's voice session runs on a pipeline thread,
 * at a lower priority than the loop (thread-priority.ts): on a busy machine that thread is
 * the first to wait for a core, and a caller who talks over the agent went on hearing it
 * until the thread caught up with their frames (barge-in reaction p95 up to 260 ms at 200
 * calls on two cores, against ~100 ms on an idle machine; #5). The loop reads every caller
 * frame anyway, so it watches for the one decision that must not wait: caller speech over
 * the agent long enough to stop it (`stopAfterVoicedMs`). It then pauses the leg itself
 * (`clear`, the unplayed audio held) and tells the session, whose turn detector takes the
 * pause over, confirms it or resumes the agent (`VoiceSession.transportPaused`).
 *
 * It decides as the detector would on the same frames: the same energy VAD (its level summed
 * from the μ-law codes, equal to the detector's from the decoded samples) and the same voiced
 * run (a single quiet frame does not end it, two do). The detector may still pause first
 * (speech that began before the agent did, counted over the whole utterance): then the leg
 * is already paused and nothing happens here.
 */
import { EnergyVad, FRAME_MS, mulawLevelDbfs, stopAfterVoicedMs } from '@vap/voice-pipeline';
import type { AgentConfig } from '@vap/shared';

const loopClock = (): number => performance.now();

/** One call's watch. Feed it every caller frame, in order, as it arrives. */
export class EarlyBargeIn {
  private readonly vad = new EnergyVad({ sampleRateHz: 8000 });
  private voicedRunMs = 0;
  private quietFrames = 0;
  /** When the first voiced frame of the current run arrived (`clock` ms). */
  private runStartedAt = 0;

  /** Null when the agent's interruption is off: nothing to watch for. */
  static forAgent(interruption: AgentConfig['interruption'], clock: () => number = loopClock): EarlyBargeIn | null {
    return interruption.enabled ? new EarlyBargeIn(stopAfterVoicedMs(interruption.sensitivity), clock) : null;
  }

  /** `clock` (ms) is read only on voiced frames: most frames, quiet ones, cost no clock read. */
  constructor(
    private readonly stopAfterMs: number,
    private readonly clock: () => number = loopClock,
  ) {}

  /**
   * One caller frame (μ-law, normally 20 ms), as it arrives. Returns the reaction in ms (now
   * less the arrival of the run's first voiced frame, the detector's speech onset) when the
   * caller has spoken long enough to stop the agent, on this frame and each voiced frame
   * after it in the run; else null. Whether the agent is playing is the caller's to check.
   */
  frame(mulaw: Uint8Array): number | null {
    const { isSpeech } = this.vad.decide(mulawLevelDbfs(mulaw));
    if (!isSpeech) {
      if (++this.quietFrames >= 2) this.voicedRunMs = 0;
      return null;
    }
    this.quietFrames = 0;
    const now = this.clock();
    if (this.voicedRunMs === 0) this.runStartedAt = now;
    this.voicedRunMs += FRAME_MS;
    return this.voicedRunMs >= this.stopAfterMs ? now - this.runStartedAt : null;
  }
}
