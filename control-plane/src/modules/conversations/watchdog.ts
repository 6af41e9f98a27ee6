import type { Logger } from 'pino';
import type { CallService, LostCallRules } from './call-service.js';
import { DEFAULT_LOST_CALL_RULES } from './call-service.js';

/**
 * Fails the in-progress calls of media gateways that stopped sending heartbeats (crash,
 * kill -9, network partition), every `intervalMs`. Every control plane runs one; the
 * conditional UPDATE behind it fails each call exactly once, so they need no leader.
 * The clock is the {@link CallService}'s, so tests move time instead of waiting.
 */
export class GatewayWatchdog {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** performance.now() of the last tick: a late one means this process stalled. */
  private lastTickAt: number | undefined;
  private readonly rules: LostCallRules;
  private readonly intervalMs: number;

  constructor(private readonly deps: { calls: CallService; log: Logger; intervalMs?: number; rules?: Partial<LostCallRules> }) {
    this.rules = { ...DEFAULT_LOST_CALL_RULES, ...deps.rules };
    this.intervalMs = deps.intervalMs ?? 2000;
  }

  /** Starts the periodic pass (default every 2 s: well inside one 3× heartbeat window). */
  start(): void {
    this.lastTickAt = performance.now();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** One pass; resolves with the number of calls failed. */
  async runOnce(): Promise<number> {
    return this.deps.calls.failLostCalls(this.rules);
  }

  /** Stops the timer and waits for a pass in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private tick(): void {
    const at = performance.now();
    const sinceLast = at - (this.lastTickAt ?? at);
    this.lastTickAt = at;
    if (sinceLast > 2 * this.intervalMs) {
      // This process did not run for a while (a long pause, a starved CPU, a suspended VM): the
      // heartbeats that came meanwhile may still wait unread behind this timer, and silence this
      // control plane could not hear proves nothing (as after an outage).
      this.deps.calls.heartbeatsUnheardUntilNow();
      this.deps.log.warn({ stalledMs: Math.round(sinceLast) }, 'control plane stalled: gateway silence over the stall is not counted');
      return;
    }
    // A slow database must not stack passes on top of each other.
    if (this.running) return;
    this.running = this.runOnce()
      .then(
        () => undefined,
        (err: unknown) => this.deps.log.warn({ err }, 'gateway watchdog pass failed; will retry'),
      )
      .finally(() => {
        this.running = undefined;
      });
  }
}
