import type { Logger } from 'pino';
import { BusRequestError, WakeableDelays } from '@vap/shared';
import type { Bus, Payload } from '@vap/shared';

export type EndRecord = Payload<'sessionEnded'>;

export interface EndRecordDeliveryOptions {
  bus: Bus;
  logger: Logger;
  /** How long one attempt waits for a control plane's answer (ms). Default 5000. */
  attemptTimeoutMs?: number;
  /** Wait before the first retry (ms); doubled after each failure up to `maxRetryMs`. Default 500. */
  firstRetryMs?: number;
  /** Longest wait between two attempts (ms). Default 10 000. */
  maxRetryMs?: number;
  /** How long a record is retried before it is given up (ms). Default 15 minutes. */
  giveUpAfterMs?: number;
  /**
   * Records kept waiting at most (default 2000, ~8 minutes of calls ending at 200 concurrent
   * calls); one more gets a single attempt. Bounds the memory an outage costs the gateway.
   */
  maxWaiting?: number;
}

/**
 * Delivers each finished call's end record to a control plane (bus request `call.end`) and
 * retries until one answers that it has stored it. The record is the call's transcript, cost
 * and status: published without an answer, it was lost whenever no control plane could store it
 * at that moment (a database restart, every control plane restarting), and the call was later
 * marked `failed`/`gateway_lost` with no cost. While a record waits, its conversation stays in
 * the gateway's heartbeat ({@link conversationIds}), so no control plane takes the call for lost.
 * The retry is in memory: a gateway that dies with records waiting loses them (the watchdog then
 * fails those calls as it would any call of a lost gateway).
 */
export class EndRecordDelivery {
  private readonly waiting = new Map<string, Promise<void>>();
  private readonly delays = new WakeableDelays();
  private closeDeadline: number | null = null;

  constructor(private readonly opts: EndRecordDeliveryOptions) {}

  /** Conversations whose end record no control plane has acknowledged yet. */
  get conversationIds(): IterableIterator<string> {
    return this.waiting.keys();
  }

  get size(): number {
    return this.waiting.size;
  }

  /**
   * Starts delivering `record`; resolves once a control plane has stored it or it was given up
   * (logged as an error). Never rejects. The record counts as waiting from this call on.
   */
  deliver(record: EndRecord): Promise<void> {
    const id = record.conversationId;
    const patient = this.waiting.size < (this.opts.maxWaiting ?? 2000);
    const run = this.run(record, patient).finally(() => {
      if (this.waiting.get(id) === run) this.waiting.delete(id);
    });
    this.waiting.set(id, run);
    return run;
  }

  /**
   * Gives waiting records (and any delivered from now on) until `graceMs` from now, retrying at
   * once and then on their schedule; resolves when every one is delivered or given up.
   */
  async close(graceMs: number): Promise<void> {
    this.closeDeadline = performance.now() + graceMs;
    this.delays.wakeAll();
    await Promise.all([...this.waiting.values()]);
  }

  /** Sends `record` until it is stored, given up, or (not `patient`: too many waiting) after one attempt. */
  private async run(record: EndRecord, patient: boolean): Promise<void> {
    const { bus, logger } = this.opts;
    const log = logger.child({ conversationId: record.conversationId, tenantId: record.tenantId });
    const startedAt = performance.now();
    const giveUpAt = patient ? startedAt + (this.opts.giveUpAfterMs ?? 15 * 60_000) : startedAt;
    let delayMs = this.opts.firstRetryMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        await bus.request('callEnd', record, { timeoutMs: this.opts.attemptTimeoutMs ?? 5000 });
        if (attempt > 1) log.info({ attempts: attempt, waitedMs: Math.round(performance.now() - startedAt) }, 'end record stored by a control plane after retries');
        return;
      } catch (err) {
        const code = err instanceof BusRequestError ? err.code : undefined;
        const deadline = Math.min(giveUpAt, this.closeDeadline ?? Infinity);
        const now = performance.now();
        if (now >= deadline) {
          log.error(
            { err, code, attempts: attempt, waitedMs: Math.round(now - startedAt), closing: this.closeDeadline !== null, tooManyWaiting: !patient },
            'end record not stored by any control plane; given up: the call will be marked failed (gateway_lost) without its transcript and cost',
          );
          return;
        }
        if (attempt === 1) log.warn({ err, code }, 'end record not stored by a control plane yet; retrying until one does');
        await this.delays.sleep(Math.min(delayMs, deadline - now));
        delayMs = Math.min(delayMs * 2, this.opts.maxRetryMs ?? 10_000);
      }
    }
  }
}
