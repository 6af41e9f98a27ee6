/**
 * One timer for every simulated caller in the process (the load generator runs hundreds).
 * Each caller sends a frame every 20 ms, but not all in the same instant: callers are
 * spread round-robin over {@link PHASES} phases of the 20 ms period, as the independent
 * calls of a real carrier are (each stream's frame clock starts when its call connected).
 * Sending every caller's frame in one burst would hand the gateway hundreds of frames at
 * once every 20 ms, a load no carrier produces. Sub-slot n fires at origin + n × 4 ms on the
 * monotonic clock, so the timer does not drift, and ticks the callers of phase n mod 5. A
 * caller aligns its frame clock to {@link add}'s return value, so each of its ticks sends
 * exactly one frame.
 */
export interface Ticking {
  tick(now: number): void;
}

const FRAME_MS = 20;
/** Phases of the frame period the callers are spread over. */
export const PHASES = 5;
const SUB_SLOT_MS = FRAME_MS / PHASES;

class SimulatorTicker {
  private readonly groups: Set<Ticking>[] = Array.from({ length: PHASES }, () => new Set<Ticking>());
  private readonly phaseOf = new Map<Ticking, number>();
  private nextPhase = 0;
  private timer: NodeJS.Timeout | undefined;
  private originMs = 0;
  /** The sub-slot the timer is set for. */
  private slot = 0;

  /** Join; returns the time of the member's first tick (its frame clock origin). */
  add(member: Ticking): number {
    const phase = this.nextPhase;
    this.nextPhase = (this.nextPhase + 1) % PHASES;
    this.groups[phase]!.add(member);
    this.phaseOf.set(member, phase);
    if (this.timer === undefined) {
      this.originMs = performance.now();
      this.slot = 0;
      this.timer = setTimeout(() => this.run(), 0);
    }
    const first = this.slot + ((phase - (this.slot % PHASES) + PHASES) % PHASES);
    return this.originMs + first * SUB_SLOT_MS;
  }

  remove(member: Ticking): void {
    const phase = this.phaseOf.get(member);
    if (phase === undefined) return;
    this.phaseOf.delete(member);
    this.groups[phase]!.delete(member);
    if (this.phaseOf.size === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private run(): void {
    this.timer = undefined;
    const now = performance.now();
    // A late timer serves every phase whose sub-slot has passed (each at most once).
    const last = Math.min(this.slot + PHASES - 1, Math.max(this.slot, Math.floor((now - this.originMs) / SUB_SLOT_MS)));
    for (let s = this.slot; s <= last; s++) {
      for (const m of this.groups[s % PHASES]!) {
        try {
          m.tick(now);
        } catch {
          // A member's socket failing must not stop the others; it learns from its close event.
        }
      }
    }
    if (this.phaseOf.size === 0) return;
    this.slot = Math.max(last + 1, Math.floor((now - this.originMs) / SUB_SLOT_MS) + 1);
    this.timer = setTimeout(() => this.run(), Math.max(0, this.originMs + this.slot * SUB_SLOT_MS - now));
  }
}

/** The process-wide ticker of simulated callers. */
export const simulatorTicker = new SimulatorTicker();
