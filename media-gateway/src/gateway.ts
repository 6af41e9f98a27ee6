import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { PROMETHEUS_CONTENT_TYPE, SUBJECTS, createObjectStore, metricsExposition, metricsRequestAllowed, newId } from '@vap/shared';
import type { Bus, BusSubscription, ObjectStore } from '@vap/shared';
import { startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { Admission, REFUSED_RETRY_AFTER_S, admissionLimits, refusalProblem } from './admission.js';
import type { CallLeg } from './call-leg.js';
import { CallSessions } from './call-sessions.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from './config.js';
import type { GatewayConfig } from './config.js';
import { DEFAULT_HEAP_GROWING_PERCENT, applyHeapGrowingPercent, explicitHeapGrowingFlag } from './heap-growth.js';
import type { HeapGrowth } from './heap-growth.js';
import { GatewayMetrics } from './metrics/gateway-metrics.js';
import { EncoderPool } from './recording/encoder-pool.js';
import { PipelineThreads } from './pipeline-threads/pipeline-threads.js';
import { RecordingArchiver } from './recording/recording-archiver.js';
import { attachTelnyxMediaStreams } from './telnyx/media-stream-server.js';
import { attachTwilioMediaStreams } from './twilio/media-stream-server.js';
import { OutboundPacer } from './twilio/pacer.js';
import { mediaStreamClosed } from './twilio/twilio-leg.js';
import { UpgradeRouter } from './upgrade-router.js';
import { attachVonageMediaStreams } from './vonage/vonage-media-stream-server.js';
import { gatewayClientError, registerGatewayProblems, sendGatewayProblem } from './http-problems.js';

/**
 * The pacer serves its streams in 4 groups, 5 ms apart, each on its own 20 ms grid, rather than
 * all in one tick (#5). bench:calls at 200 calls (`--steady-sec 30 --no-relay`, 5 runs each in
 * alternating order): late frames at the callers 11-74 (median 19) against 30-177 (65), at the
 * pacer 15-28 against 1-110 (52), largest gap 43-53 against 49-67 ms; pacing jitter p99 not
 * better (8.81-10.71 against 7.35-10.07 ms), CPU per call-second the same within the noise.
 */
const PACER_PHASES = 4;

/** A running media gateway. */
export interface MediaGateway {
  app: FastifyInstance;
  url: string;
  /** Agent ids whose cached configuration was dropped because the control plane changed them. */
  readonly invalidatedAgents: ReadonlySet<string>;
  /** This instance's id in heartbeats and conversations (`gw_…`). */
  readonly gatewayId: string;
  /** The voice sessions (absent when a custom `onCall` handles legs). */
  readonly sessions: CallSessions | undefined;
  /** Where each provider is reached (real API or sandbox simulator). */
  readonly providers: ProviderRuntime;
  /** This gateway's Prometheus metrics (served with the process metrics at `GET /metrics`). */
  readonly metrics: GatewayMetrics;
  /** What the gateway did with V8's heap growth at its start (`heap-growth.ts`; one setting for the whole process). */
  readonly heapGrowth: HeapGrowth;
  /**
   * Shutdown's first step: from now on every new call is refused (503 at the upgrade, reason
   * `draining`; `/readyz` 503), while the calls carried go on until they end, `timeoutMs` pass
   * (default: the config's `drainTimeoutMs`) or `hurry` aborts. Resolves with the number of
   * calls still carried then, which `close` ends (`gateway_shutdown`). Heartbeats go on
   * meanwhile, so control planes keep the calls; they say the gateway drains (one is sent at
   * once), so while every gateway drains control planes answer new calls with their apology.
   */
  drain(opts?: { timeoutMs?: number; hurry?: AbortSignal }): Promise<number>;
  close(): Promise<void>;
}

/** While draining, how often the calls left are counted, ms. */
const DRAIN_POLL_MS = 100;
/** While draining, how often the calls left are logged, ms. */
const DRAIN_LOG_MS = 10_000;

/**
 * The media gateway: its health endpoint, its link to the control plane over the bus, and
 * Twilio media streams on the same port (`twilio/media-stream-server.ts`), paced by one
 * shared timer. Telnyx, Vonage, SIP and WebRTC arrive with the voice-loop issue (#4).
 */
export async function startMediaGateway(
  config: GatewayConfig,
  deps: {
    bus: Bus;
    logger: Logger;
    /** A carrier leg connected (Twilio stream after `start`); the callee owns it. Default: log and hang up. */
    onCall?: (leg: CallLeg) => void;
    /** Provider endpoints; default: from the config's keys, simulators for the rest. */
    providers?: ProviderRuntime;
    /** Where call recordings go; default: the store `config.recordings` describes. */
    recordingStore?: ObjectStore;
    /** Entry of the pipeline threads; default `pipeline-worker.mjs` (tests wrap it in a fixture). */
    pipelineWorkerUrl?: URL;
  },
): Promise<MediaGateway> {
  // Before the pipeline threads start; the flag is the process's, their isolates' too.
  // A config not from loadGatewayConfig still leaves a flag on Node's command line alone.
  const heapGrowth = applyHeapGrowingPercent(config.heapGrowingPercent ?? DEFAULT_HEAP_GROWING_PERCENT, config.heapGrowingNodeFlag ?? explicitHeapGrowingFlag({ execArgv: process.execArgv, nodeOptions: undefined }));
  deps.logger.debug({ heapGrowth }, 'V8 heap growth');
  const app: FastifyInstance = Fastify({ loggerInstance: deps.logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }), clientErrorHandler: gatewayClientError });
  registerGatewayProblems(app);
  const invalidated = new Set<string>();
  const subs: BusSubscription[] = [
    deps.bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, ({ payload }) => {
      invalidated.add(payload.agentId);
      deps.logger.debug({ agentId: payload.agentId, change: payload.change }, 'agent configuration changed');
    }),
  ];
  // Gauges read the endpoint (attached below) and the pacer only when scraped.
  const lateGapMs = 40;
  const pacer = new OutboundPacer({ phases: PACER_PHASES, lateGapMs, onSinkError: (err) => deps.logger.warn({ err }, 'outbound frame not sent'), onFrameGap: (gapMs) => metrics.frameGap(gapMs) });
  const gatewayId = newId('gw');
  const ownProviders = !deps.providers;
  const providers = deps.providers ?? (await startProviders(config.providers));
  // Encoder workers start on the first recorded call; a gateway that records nothing runs none.
  const encoders = new EncoderPool({ size: config.recordingEncoderWorkers, logger: deps.logger });
  const recordings = new RecordingArchiver({ store: deps.recordingStore ?? createObjectStore(config.recordings), encoders });
  const pipelines = !deps.onCall && config.pipelineThreads > 0 ? new PipelineThreads({ size: config.pipelineThreads, logger: deps.logger, ...(deps.pipelineWorkerUrl ? { workerUrl: deps.pipelineWorkerUrl } : {}) }) : undefined;
  const limits = admissionLimits(config);
  const metrics = new GatewayMetrics({
    activeCalls,
    pacerStats: () => pacer.stats,
    mediaStreamClosed,
    lateGapMs,
    ...(pipelines ? { pipelineThreads: () => pipelines.stats() } : {}),
    // Read when scraped, by which time `admission` (below) exists.
    acceptingCalls: () => admission.check() === null,
    ...(limits.overloadLagMs > 0 ? { overloadLagMs: () => admission.lastLagMs } : {}),
  });
  const sessions = deps.onCall
    ? undefined
    : new CallSessions({
        bus: deps.bus,
        logger: deps.logger,
        gatewayId,
        endpoints: providers.endpoints,
        heartbeatIntervalMs: config.heartbeatIntervalMs,
        ttsFirstByteTimeoutMs: config.ttsFirstByteTimeoutMs,
        recordings,
        metrics,
        ...(pipelines ? { pipelines } : {}),
      });
  const onCall = deps.onCall ?? ((leg: CallLeg) => sessions!.handle(leg));
  // New calls are refused at capacity or while the pipelines lag (admission.ts).
  const admission = new Admission({
    ...limits,
    calls: () => endpoints.reduce((n, e) => n + e.activeLegs + e.pendingLegs, 0),
    ...(pipelines ? { threadLagMs: () => pipelines.probeLagMs() } : {}),
    logger: deps.logger,
  });
  const admit = () => admission.check();
  // Each carrier's media-stream endpoint claims its own path on the one upgrade router.
  const upgrades = new UpgradeRouter(app.server);
  const streams = attachTwilioMediaStreams(upgrades, { publicUrl: config.publicUrl, authToken: config.twilioAuthToken, logger: deps.logger, pacer, onCall, admit });
  const vonageStreams = attachVonageMediaStreams(upgrades, { logger: deps.logger, signatureSecret: config.vonageSignatureSecret, pacer, onCall, admit });
  const telnyxStreams = attachTelnyxMediaStreams(upgrades, { logger: deps.logger, pacer, onCall, admit });
  const endpoints = [streams, vonageStreams, telnyxStreams];
  function activeCalls(): number {
    return endpoints.reduce((n, e) => n + e.activeLegs, 0);
  }
  app.get('/healthz', async () => {
    const refusal = admission.check();
    return { status: 'ok', gatewayId, bus: deps.bus.kind, activeCalls: activeCalls(), acceptingCalls: refusal === null, ...(refusal ? { refusing: refusal.reason } : {}) };
  });
  // Readiness for a load balancer: 503 while new calls would be refused, so they go to another gateway.
  app.get('/readyz', async (_req, reply) => {
    const refusal = admission.check();
    if (!refusal) return { status: 'ready', gatewayId };
    return reply.code(503).header('Retry-After', String(REFUSED_RETRY_AFTER_S)).type('application/problem+json').send({ type: 'about:blank', status: 503, ...refusalProblem(refusal), gatewayId });
  });
  app.get('/metrics', async (req, reply) => {
    if (!metricsRequestAllowed(req.headers.authorization, config.metricsToken)) {
      return reply.code(401).header('WWW-Authenticate', 'Bearer').type('application/problem+json').send({ title: 'Unauthorized', status: 401, detail: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
    }
    return reply.type(PROMETHEUS_CONTENT_TYPE).send(await metricsExposition(metrics.registry));
  });
  // Sandbox helpers for the call command and load tests: where the simulators listen (to
  // script them) and what the gateway measured on a recent call. Answered to peers on this
  // machine only (http-problems.ts).
  // Real keys never leave the process: a live provider is listed without its key.
  app.get('/sandbox/providers', async () =>
    Object.fromEntries(Object.entries(providers.endpoints).map(([name, ep]) => [name, ep.simulated ? ep : { baseUrl: ep.baseUrl, simulated: false }])),
  );
  app.get<{ Params: { callSid: string } }>('/sandbox/calls/:callSid', async (req, reply) => {
    const s = sessions?.summary(req.params.callSid);
    return s ?? sendGatewayProblem(reply, 404, 'No recent call with this id on this gateway.', { callSid: req.params.callSid });
  });
  const drain = async ({ timeoutMs = config.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS, hurry }: { timeoutMs?: number; hurry?: AbortSignal } = {}): Promise<number> => {
    admission.drain();
    sessions?.drain();
    const started = performance.now();
    // A call is over once its stream is closed and its session has ended (recording stored, end record sent).
    const left = () => Math.max(admission.callsCarried(), sessions?.activeCalls ?? 0);
    if (left() > 0) deps.logger.info({ calls: left(), drainTimeoutMs: timeoutMs }, 'draining: new calls are refused; the calls in progress go on until they end (a second SIGINT or SIGTERM ends them now)');
    let loggedAt = started;
    while (left() > 0 && !hurry?.aborted && performance.now() - started < timeoutMs) {
      await sleep(Math.min(DRAIN_POLL_MS, Math.max(1, timeoutMs - (performance.now() - started))), undefined, hurry ? { signal: hurry } : undefined).catch(() => undefined);
      if (performance.now() - loggedAt >= DRAIN_LOG_MS && left() > 0) {
        loggedAt = performance.now();
        deps.logger.info({ calls: left(), elapsedMs: Math.round(loggedAt - started) }, 'draining: calls still in progress');
      }
    }
    const calls = left();
    if (calls > 0) deps.logger.warn({ calls, reason: hurry?.aborted ? 'hurried' : 'drain-timeout' }, 'drain over: the calls still in progress are ended');
    else deps.logger.info({ elapsedMs: Math.round(performance.now() - started) }, 'drained: no call in progress');
    return calls;
  };
  const close = async (): Promise<void> => {
    admission.close();
    await Promise.all(subs.map((s) => s.close()));
    // End live calls first, so each final record (and recording) reaches the control plane.
    await sessions?.close();
    await pipelines?.close();
    await encoders.close();
    await streams.close();
    await vonageStreams.close();
    await telnyxStreams.close();
    upgrades.close();
    if (ownProviders) await providers.close();
    pacer.stop();
    await app.close();
  };
  let url: string;
  try {
    // Calls are taken once the pipeline threads have loaded (a call before would wait for its greeting).
    await pipelines?.ready();
    url = await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    // A gateway that could not start (a thread that did not load, a port taken) leaves nothing running.
    await close();
    throw err;
  }
  sessions?.startHeartbeat();
  return { app, url, invalidatedAgents: invalidated, gatewayId, sessions, providers, metrics, heapGrowth, drain, close };
}
