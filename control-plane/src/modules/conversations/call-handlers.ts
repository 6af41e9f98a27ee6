import type { Logger } from 'pino';
import { REQUESTS, SUBJECTS } from '@vap/shared';
import type { Bus, BusSubscription } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { storableText } from '../../db/storable-text.js';
import type { SecretBox } from '../../secret-box.js';
import { EventOutbox } from '../webhooks/event-outbox.js';
import { enqueueAnalysis } from './analysis-job.js';
import { CallService } from './call-service.js';
import type { LostCallRules } from './call-service.js';
import { ConversationRepository } from './repository.js';
import { OutageRetry } from './outage-retry.js';
import type { OutageRetryOptions } from './outage-retry.js';
import { GatewayWatchdog } from './watchdog.js';

/** Control planes share call work as this queue group: each message is handled once. */
export const CONTROL_PLANE_QUEUE = 'control-plane';

/**
 * Subscribes a {@link CallService} to the gateway contract of `shared/src/bus/subjects.ts`.
 * `call.prepare`, `call.end` and the session subjects go to one member of the `control-plane` queue
 * group; heartbeats go to every control plane (an idempotent upsert). A failing handler
 * is logged here; `call.prepare` and `call.end` then answer `responder-failed` so the gateway
 * can retry. The session subjects, published once, are retried here while the database is
 * unreachable ({@link OutageRetry}).
 * @param heartbeatSettleMs wait before failing calls missing from a heartbeat (see {@link CallService.heartbeat}).
 */
export function subscribeCallHandlers(bus: Bus, calls: CallService, log: Logger, opts: { heartbeatSettleMs?: number; outageRetry?: OutageRetryOptions } = {}): BusSubscription {
  const queue = CONTROL_PLANE_QUEUE;
  const outage = new OutageRetry(opts.outageRetry);
  const guard =
    <T>(what: string, fn: (payload: T) => Promise<void>, retry: 'retry-outage' | 'once') =>
    async (msg: { subject: string; payload: T }) => {
      // Relayed text (transcripts, LLM and tool output, carrier metadata) is kept even where Postgres could not store it as sent (storable-text.ts).
      const payload = storableText(msg.payload);
      try {
        await (retry === 'retry-outage' ? outage.run(() => fn(payload)) : fn(payload));
      } catch (err) {
        log.error({ err, subject: msg.subject }, `${what} failed`);
      }
    };
  const settleMs = opts.heartbeatSettleMs ?? 1000;
  const subs: BusSubscription[] = [
    bus.respond(
      'callPrepare',
      async (req) => {
        try {
          return await calls.prepare(storableText(req));
        } catch (err) {
          log.error({ err, subject: REQUESTS.callPrepare.subject, tenantId: req.tenantId, callSid: req.callSid }, 'call.prepare failed');
          throw err;
        }
      },
      { queue },
    ),
    // Answered once stored: a gateway retries an unanswered end record (another control plane, or this one once the database is back).
    bus.respond(
      'callEnd',
      async (rec) => {
        try {
          await calls.end(storableText(rec));
          return { ok: true as const };
        } catch (err) {
          log.error({ err, subject: REQUESTS.callEnd.subject, tenantId: rec.tenantId, conversationId: rec.conversationId }, 'storing a session end record failed; the gateway will send it again');
          throw err;
        }
      },
      { queue },
    ),
    bus.subscribe('sessionMessage', SUBJECTS.sessionMessage.wildcard, guard('storing a session message', (p) => calls.recordMessage(p), 'retry-outage'), { queue }),
    // Gateways of earlier versions publish their end records unanswered (subjects.ts).
    bus.subscribe('sessionEnded', SUBJECTS.sessionEnded.wildcard, guard('storing a session end record', (p) => calls.end(p), 'retry-outage'), { queue }),
    bus.subscribe('sessionError', SUBJECTS.sessionError.wildcard, guard('relaying a session error', (p) => calls.reportError(p), 'retry-outage'), { queue }),
    bus.subscribe('sessionEvent', SUBJECTS.sessionEvent.wildcard, guard('relaying a session event', (p) => calls.reportEvent(p), 'retry-outage'), { queue }),
    // A heartbeat is not retried: the next one says more.
    bus.subscribe('gatewayHeartbeat', SUBJECTS.gatewayHeartbeat.wildcard, guard('recording a gateway heartbeat', (p) => calls.heartbeat(p, settleMs), 'once')),
  ];
  return {
    close: async () => {
      // Work waiting for the database gets one last attempt; the subscriptions wait for it.
      outage.close();
      await Promise.all(subs.map((s) => s.close()));
    },
  };
}

/** A control plane's running call handling: bus handlers and the gateway watchdog. */
export interface CallHandling {
  calls: CallService;
  watchdog: GatewayWatchdog;
  /** Unsubscribes (waiting for handlers in flight) and stops the watchdog. */
  close(): Promise<void>;
}

/**
 * Starts the voice loop's control-plane side: the bus handlers and, unless
 * `watchdog: false` (tests drive `watchdog.runOnce()` themselves), the watchdog timer.
 * `now` is the clock of every time rule (heartbeat ages, call start times).
 */
export function startCallHandling(deps: {
  db: Db;
  bus: Bus;
  secrets: SecretBox;
  log: Logger;
  /** Where events are staged for webhook delivery; a fresh one (no dispatcher woken) when absent. */
  outbox?: EventOutbox;
  now?: () => number;
  watchdog?: { intervalMs?: number; rules?: Partial<LostCallRules> } | false;
  heartbeatSettleMs?: number;
  /** See CallService: since when heartbeats count (default: now). */
  heartbeatsSeenSince?: number;
}): CallHandling {
  const log = deps.log.child({ module: 'calls' });
  // Post-call analysis is enqueued in the end record's transaction; a JobRunner (control-plane.ts) runs it.
  const onFinished = [enqueueAnalysis];
  const calls = new CallService({ repo: new ConversationRepository(deps.db), bus: deps.bus, secrets: deps.secrets, log, outbox: deps.outbox ?? new EventOutbox(), onFinished, ...(deps.now ? { now: deps.now } : {}), ...(deps.heartbeatsSeenSince === undefined ? {} : { heartbeatsSeenSince: deps.heartbeatsSeenSince }) });
  const watchdog = new GatewayWatchdog({ calls, log, ...(deps.watchdog ? deps.watchdog : {}) });
  const subscription = subscribeCallHandlers(deps.bus, calls, log, deps.heartbeatSettleMs === undefined ? {} : { heartbeatSettleMs: deps.heartbeatSettleMs });
  if (deps.watchdog !== false) watchdog.start();
  return {
    calls,
    watchdog,
    close: async () => {
      await subscription.close();
      await watchdog.stop();
    },
  };
}
