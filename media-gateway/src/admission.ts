/**
 * Whether the gateway takes one more call (#5). Overload must cost new calls, not the calls
 * already running: a pipeline thread seconds behind answers every one of its calls seconds
 * late (and, before the turn detector took late transcripts, dropped some of their turns),
 * where refusing the next calls keeps them responsive. Two rules, each off at 0:
 *
 * - **at capacity**: the gateway carries `maxCalls` streams (started or still handshaking);
 * - **overloaded**: a pipeline thread, or the gateway's own event loop, was more than
 *   `overloadLagMs` behind at two readings in a row (a reading every `intervalMs`): one stall
 *   (a long collection, a module loading) refuses nobody. It stays overloaded until the lag is
 *   back under half of that, so that one quick answer does not let a burst of calls in onto
 *   a thread still catching up.
 *
 * And a third, for shutdown: **draining** (`drain()`, from the first SIGTERM, SIGINT or SIGHUP): the
 * gateway finishes the calls it carries and takes no new one (`gateway.ts`).
 *
 * A refused stream gets HTTP 503 at its WebSocket upgrade (`media-stream-endpoint.ts`),
 * counted in `svc.telephony.media_stream_closed` with the rule as its reason; `/readyz`
 * answers 503 meanwhile, so that a load balancer sends calls to another gateway.
 */
import type { Logger } from 'pino';

/** Seconds a refused carrier (the 503 at its upgrade) and a load balancer (`/readyz`) are told to wait: `Retry-After`. */
export const REFUSED_RETRY_AFTER_S = 5;

/** `GATEWAY_OVERLOAD_LAG_MS` when unset (the README gives the overload runs that chose it). */
export const DEFAULT_OVERLOAD_LAG_MS = 500;

/** Why a new call is refused. */
export type AdmissionRefusal = { reason: 'at-capacity'; calls: number; maxCalls: number } | { reason: 'overloaded'; lagMs: number; overloadLagMs: number } | { reason: 'draining'; calls: number };

/** Words for a refusal's reason in a log line: "media stream refused: gateway …". */
export const REFUSAL_WORDS: Readonly<Record<AdmissionRefusal['reason'], string>> = Object.freeze({ 'at-capacity': 'at capacity', overloaded: 'overloaded', draining: 'draining' });

/**
 * A refusal as the fields of an RFC 7807 body (`/readyz`'s 503 and a refused stream's): the
 * same title, a `detail` in words for people, and the `reason` for programs.
 */
export function refusalProblem(refusal: AdmissionRefusal): { title: string; detail: string; reason: AdmissionRefusal['reason'] } {
  const calls = (n: number) => `${n} ${n === 1 ? 'call' : 'calls'}`;
  const detail =
    refusal.reason === 'at-capacity'
      ? `The gateway carries ${calls(refusal.calls)}, its limit (GATEWAY_MAX_CALLS=${refusal.maxCalls})`
      : refusal.reason === 'overloaded'
        ? `The gateway's pipelines are ${refusal.lagMs} ms behind, over GATEWAY_OVERLOAD_LAG_MS=${refusal.overloadLagMs}`
        : `The gateway is shutting down: it finishes the ${calls(refusal.calls)} it carries and takes no new one`;
  return { title: 'Not accepting calls', detail, reason: refusal.reason };
}

/** The two limits, each 0 for off. */
export interface AdmissionLimits {
  /** Streams the gateway carries at most; 0: no limit. */
  maxCalls: number;
  /** Lag, ms, past which the gateway is overloaded; 0: never. */
  overloadLagMs: number;
}

/** The limits a gateway configuration means, its defaults filled in (`GatewayConfig` leaves them optional). */
export function admissionLimits(config: { maxCalls?: number | undefined; overloadLagMs?: number | undefined }): AdmissionLimits {
  return { maxCalls: config.maxCalls ?? 0, overloadLagMs: config.overloadLagMs ?? DEFAULT_OVERLOAD_LAG_MS };
}

export interface AdmissionOptions extends AdmissionLimits {
  /** Streams carried now, started or handshaking. */
  calls: () => number;
  /** How far behind the slowest pipeline thread is, ms (`PipelineThreads.probeLagMs`); absent: the pipelines run on the gateway's loop. */
  threadLagMs?: () => number;
  logger: Logger;
  /** How often the lag is read, ms. Default 250. */
  intervalMs?: number;
  /** Monotonic clock, ms. Default `performance.now()`. */
  now?: () => number;
}

export class Admission {
  private overloaded = false;
  private draining = false;
  /** Readings in a row over the limit. */
  private strikes = 0;
  private lagMs = 0;
  private loopLagMs = 0;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(private readonly opts: AdmissionOptions) {
    for (const [name, v] of [['maxCalls', opts.maxCalls], ['overloadLagMs', opts.overloadLagMs]] as const) {
      if (!Number.isInteger(v) || v < 0) throw new Error(`Admission: ${name} must be a non-negative integer`);
    }
    this.now = opts.now ?? (() => performance.now());
    if (opts.overloadLagMs > 0) {
      // The timer's own lateness is the gateway loop's lag; each tick also keeps the threads' pings going.
      const intervalMs = opts.intervalMs ?? 250;
      let due = this.now() + intervalMs;
      this.timer = setInterval(() => {
        const now = this.now();
        this.loopLagMs = Math.max(0, now - due);
        due = now + intervalMs;
        this.read();
      }, intervalMs);
      this.timer.unref();
    }
  }

  /** Null when a new call may come in, else why not. */
  check(): AdmissionRefusal | null {
    const { maxCalls, overloadLagMs } = this.opts;
    if (this.draining) return { reason: 'draining', calls: this.callsCarried() };
    if (maxCalls > 0) {
      const calls = this.opts.calls();
      if (calls >= maxCalls) return { reason: 'at-capacity', calls, maxCalls };
    }
    if (this.overloaded) return { reason: 'overloaded', lagMs: Math.round(this.lagMs), overloadLagMs };
    return null;
  }

  /** Streams carried now, started or handshaking (what `maxCalls` counts, and a drain waits on). */
  callsCarried(): number {
    return this.opts.calls();
  }

  /** The lag last read, ms: the larger of the slowest pipeline thread's and the gateway loop's. */
  get lastLagMs(): number {
    return this.lagMs;
  }

  /** Refuses every new call from now on (shutdown); the calls carried are not touched. */
  drain(): void {
    this.draining = true;
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** One reading (each tick): the lag, and the overloaded state from it. */
  private read(): void {
    const lag = Math.max(this.loopLagMs, this.opts.threadLagMs?.() ?? 0);
    this.lagMs = lag;
    const limit = this.opts.overloadLagMs;
    this.strikes = lag > limit ? this.strikes + 1 : 0;
    if (!this.overloaded && this.strikes >= 2) {
      this.overloaded = true;
      this.opts.logger.warn({ lagMs: Math.round(lag), overloadLagMs: limit }, 'gateway overloaded: new calls are refused until it catches up');
    } else if (this.overloaded && lag <= limit / 2) {
      this.overloaded = false;
      this.opts.logger.info({ lagMs: Math.round(lag), overloadLagMs: limit }, 'gateway caught up: new calls are taken again');
    }
  }
}
