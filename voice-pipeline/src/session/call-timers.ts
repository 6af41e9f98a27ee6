/**
 * The call's clocks: maximum duration, and caller silence. Silence counts only while it is
 * the caller's turn (the agent is not speaking or about to): after `promptAfterMs` the
 * agent prompts once (when silence detection is on), and after `idleMs` more without a
 * word the call ends. Any caller activity resets both stages.
 */
export class CallTimers {
  private maxTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private prompted = false;
  private stopped = false;

  constructor(
    private readonly opts: {
      maxDurationMs: number;
      idleMs: number;
      /** Silence before the prompt; null = no prompt, end after `idleMs`. */
      promptAfterMs: number | null;
      onMaxDuration: () => void;
      onIdlePrompt: () => void;
      onIdleTimeout: () => void;
    },
  ) {}

  start(): void {
    this.maxTimer = setTimeout(() => this.opts.onMaxDuration(), this.opts.maxDurationMs);
  }

  /** The agent finished speaking: the caller's silence starts counting. */
  callerTurn(): void {
    if (this.stopped) return;
    clearTimeout(this.idleTimer);
    const prompt = !this.prompted && this.opts.promptAfterMs !== null;
    this.idleTimer = setTimeout(
      () => {
        if (prompt) {
          this.prompted = true;
          this.opts.onIdlePrompt();
        } else {
          this.opts.onIdleTimeout();
        }
      },
      prompt ? this.opts.promptAfterMs! : this.opts.idleMs,
    );
  }

  /** The agent is speaking or preparing to: silence is not the caller's. */
  agentTurn(): void {
    clearTimeout(this.idleTimer);
  }

  /** The caller spoke or pressed a key. */
  callerActive(): void {
    clearTimeout(this.idleTimer);
    this.prompted = false;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.maxTimer);
    clearTimeout(this.idleTimer);
  }
}
