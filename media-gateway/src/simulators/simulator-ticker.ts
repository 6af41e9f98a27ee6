/**
 * One 20 ms timer for every simulated caller in the process (the load generator runs
 * hundreds): slot n fires at origin + n × 20 ms on the monotonic clock, so callers stay in
 * step and the timer does not drift. A caller aligns its frame clock to {@link add}'s
 * return value, so each tick sends exactly one frame per caller.
 */
export interface Ticking {
  tick(now: number): void;
}

const FRAME_MS = 20;

class SimulatorTicker {
  private readonly members = new Set<Ticking>();
  private timer: NodeJS.Timeout | undefined;
  private originMs = 0;
  private slot = 0;

  /** Join; returns the time of the next tick (the member's frame clock origin). */
  add(member: Ticking): number {
    this.members.add(member);
    if (this.timer === undefined) {
      this.originMs = performance.now();
      this.slot = 0;
      this.timer = setTimeout(() => this.run(), 0);
    }
    return this.originMs + this.slot * FRAME_MS;
  }

  remove(member: Ticking): void {
    this.members.delete(member);
    if (this.members.size === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private run(): void {
    this.timer = undefined;
    const now = performance.now();
    for (const m of this.members) {
      try {
        m.tick(now);
      } catch {
        // A member's socket failing must not stop the others; it learns from its close event.
      }
    }
    if (this.members.size === 0) return;
    this.slot = Math.max(this.slot + 1, Math.floor((now - this.originMs) / FRAME_MS) + 1);
    this.timer = setTimeout(() => this.run(), Math.max(0, this.originMs + this.slot * FRAME_MS - now));
  }
}

/** The process-wide ticker of simulated callers. */
export const simulatorTicker = new SimulatorTicker();
