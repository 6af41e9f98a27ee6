import { z } from 'zod';
import { OBJECT_STORE_ENV_VARS, ObjectStoreConfigError, objectStoreConfigFromEnv } from '@vap/shared';
import type { ObjectStoreConfig } from '@vap/shared';
import { ELEVENLABS_WEBSOCKETS } from '@vap/voice-pipeline';
import type { ElevenLabsWebSocket } from '@vap/voice-pipeline';
import { DEFAULT_OVERLOAD_LAG_MS } from './admission.js';
import { DEFAULT_HEAP_GROWING_PERCENT, MAX_HEAP_GROWING_PERCENT, explicitHeapGrowingFlag } from './heap-growth.js';

const optionalText = z.string().trim().min(1).optional().or(z.literal('').transform(() => undefined));
const optionalUrl = z.url({ protocol: /^(https?|wss?)$/, error: 'must be an http(s) URL' }).optional().or(z.literal('').transform(() => undefined));

/** Upper bounds of the settings `bench:calls` passes on to the gateway it starts, which checks its options against them. */
export const GATEWAY_BOUNDS = Object.freeze({ pipelineThreads: 16, maxCalls: 1_000_000, overloadLagMs: 60_000 });

/** `GATEWAY_DRAIN_TIMEOUT_MS` when unset: Kubernetes' default grace period (30 s) less a margin to end the calls left and deliver their records. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 20_000;

/** Every environment variable the media gateway reads (listed in `.env.example` too). */
export const gatewayConfigSchema = z.object({
  GATEWAY_HOST: z.string().default('127.0.0.1'),
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  NATS_URL: z.string().trim().min(1).optional().or(z.literal('').transform(() => undefined)),
  NATS_SUBJECT_PREFIX: z.string().regex(/^[A-Za-z0-9_-]*$/, 'must be one token of letters, digits, _ and -').default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Shared with the control plane on purpose: the gateway checks X-Twilio-Signature on a
  // stream upgrade over the very URL the control plane put in <Stream url>, so the two
  // must not be configured apart (reference/telephony-twilio.md §2).
  MEDIA_GATEWAY_PUBLIC_URL: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }).default('ws://127.0.0.1:3001'),
  // Unset: stream upgrades are accepted without a signature check (sandbox).
  TWILIO_AUTH_TOKEN: z.string().trim().min(1).optional().or(z.literal('').transform(() => undefined)),
  // Shared with the control plane: Vonage signs its WebSocket upgrades with it. Unset: upgrades are not checked (sandbox).
  VONAGE_SIGNATURE_SECRET: optionalText,
  // Provider keys. A provider without a key runs on its built-in simulator (sandbox).
  DEEPGRAM_API_KEY: optionalText,
  DEEPGRAM_BASE_URL: optionalUrl,
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: optionalUrl,
  ELEVENLABS_API_KEY: optionalText,
  ELEVENLABS_BASE_URL: optionalUrl,
  // ElevenLabs' text-in socket: multi-stream-input (one socket a call, a context a turn) or
  // stream-input (a socket a turn), live and simulated alike.
  ELEVENLABS_WEBSOCKET: z.enum(ELEVENLABS_WEBSOCKETS).default('multi-stream-input'),
  // How often the gateway tells control planes which calls it carries; a gateway silent for
  // three intervals has its calls marked failed.
  GATEWAY_HEARTBEAT_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  // How long a TTS stream may stay silent after text was flushed before the turn's synthesis
  // counts as stalled (retried once, then the call ends).
  TTS_FIRST_BYTE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  // Local state; the local recording store defaults to DATA_DIR/recordings (as the control plane's).
  DATA_DIR: z.string().default('.data'),
  // Worker threads that encode finished calls' recordings (MP3/WAV) off the event loop.
  RECORDING_ENCODER_WORKERS: z.coerce.number().int().min(1).max(16).default(1),
  // Worker threads that run the calls' voice pipelines (STT, LLM, TTS), off the event loop that
  // paces every call's audio. 0: the pipelines run on that event loop.
  PIPELINE_THREADS: z.coerce.number().int().min(0).max(GATEWAY_BOUNDS.pipelineThreads).default(1),
  // Streams the gateway carries at most (started or handshaking); one more is refused with 503
  // at its upgrade, and /readyz answers 503. 0: no limit.
  GATEWAY_MAX_CALLS: z.coerce.number().int().min(0).max(GATEWAY_BOUNDS.maxCalls).default(0),
  // A pipeline thread (or the gateway's own event loop) this far behind, ms, makes the gateway
  // refuse new calls until the lag is back under half of it: overload then costs new calls,
  // not the running ones. 0: never refuse for lag.
  GATEWAY_OVERLOAD_LAG_MS: z.coerce.number().int().min(0).max(GATEWAY_BOUNDS.overloadLagMs).default(DEFAULT_OVERLOAD_LAG_MS),
  // On the first SIGTERM, SIGINT or SIGHUP the gateway drains: it refuses new calls (503 at the upgrade,
  // /readyz 503) and lets the calls it carries go on until they end, for this long at most, ms;
  // then it ends those left. A second signal ends them at once. 0: end them at once.
  GATEWAY_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(DEFAULT_DRAIN_TIMEOUT_MS),
  // How far V8 lets the process's old generation grow past what the last full GC left, percent
  // (heap-growth.ts): fewer full GCs stopping the loop that paces the frames. 0: V8's own
  // heuristic. A --heap-growing-percent given to Node itself (NODE_OPTIONS) wins.
  GATEWAY_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(MAX_HEAP_GROWING_PERCENT).default(DEFAULT_HEAP_GROWING_PERCENT),
  // Bearer token GET /metrics requires (shared with the control plane). Unset: /metrics is public like /healthz.
  METRICS_TOKEN: optionalText,
  // The recording store, read by objectStoreConfigFromEnv (shared with the control plane).
  ...(Object.fromEntries(OBJECT_STORE_ENV_VARS.map((name) => [name, z.string().optional()])) as Record<(typeof OBJECT_STORE_ENV_VARS)[number], z.ZodOptional<z.ZodString>>),
});

export interface GatewayConfig {
  host: string;
  port: number;
  natsUrl: string | undefined;
  /** Put in front of every bus subject (installations sharing one NATS cluster). */
  natsSubjectPrefix: string;
  logLevel: z.infer<typeof gatewayConfigSchema>['LOG_LEVEL'];
  /** Public base URL of the gateway (`wss://gw.example.com`), no trailing slash: signed stream URLs are rebuilt from it. */
  publicUrl: string;
  /** Twilio Auth Token for stream-upgrade signatures; undefined in the sandbox. */
  twilioAuthToken: string | undefined;
  /** Vonage signature secret for WebSocket-upgrade JWTs; undefined in the sandbox. */
  vonageSignatureSecret: string | undefined;
  /** Keys and base URLs of real providers; a provider without a key uses its simulator. */
  providers: {
    deepgram: { apiKey?: string; baseUrl?: string };
    openai: { apiKey?: string; baseUrl?: string };
    elevenlabs: { apiKey?: string; baseUrl?: string; websocket: ElevenLabsWebSocket };
  };
  heartbeatIntervalMs: number;
  /** A TTS stream silent this long after a flush (or between chunks after its end) has stalled. */
  ttsFirstByteTimeoutMs: number;
  dataDir: string;
  /** Where recordings are put (the control plane reads them from the same store). */
  recordings: ObjectStoreConfig;
  /** Size of the recording encoder pool (worker threads). */
  recordingEncoderWorkers: number;
  /** Worker threads running the voice pipelines; 0: they run on the gateway's event loop. */
  pipelineThreads: number;
  /** `GET /metrics` requires `Authorization: Bearer <token>` when set; public when undefined. */
  metricsToken?: string | undefined;
  /** Streams carried at most (`admission.ts`); 0: no limit. */
  maxCalls?: number;
  /** Lag, ms, past which new calls are refused; 0: never. Absent: {@link DEFAULT_OVERLOAD_LAG_MS}. */
  overloadLagMs?: number;
  /** How long, ms, the calls carried may go on after a shutdown signal (`MediaGateway.drain`). Absent: {@link DEFAULT_DRAIN_TIMEOUT_MS}. */
  drainTimeoutMs?: number;
  /** V8's old-generation growth for the process, percent (`heap-growth.ts`); 0: V8's own. Absent: {@link DEFAULT_HEAP_GROWING_PERCENT}. */
  heapGrowingPercent?: number;
  /** The `--heap-growing-percent` Node itself was started with (its arguments or `NODE_OPTIONS`), which wins over `heapGrowingPercent`. */
  heapGrowingNodeFlag?: string | undefined;
}

export function loadGatewayConfig(env: Record<string, string | undefined> = process.env): GatewayConfig {
  const parsed = gatewayConfigSchema.safeParse(env);
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  let recordings: ObjectStoreConfig | undefined;
  try {
    recordings = objectStoreConfigFromEnv(env, parsed.data?.DATA_DIR ?? (env['DATA_DIR'] || '.data'));
  } catch (err) {
    if (!(err instanceof ObjectStoreConfigError)) throw err;
    problems.push(...err.problems);
  }
  if (!parsed.success || !recordings || problems.length > 0) throw new Error(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  const e = parsed.data;
  return Object.freeze({
    host: e.GATEWAY_HOST,
    port: e.GATEWAY_PORT,
    natsUrl: e.NATS_URL,
    natsSubjectPrefix: e.NATS_SUBJECT_PREFIX,
    logLevel: e.LOG_LEVEL,
    publicUrl: e.MEDIA_GATEWAY_PUBLIC_URL.replace(/\/$/, ''),
    twilioAuthToken: e.TWILIO_AUTH_TOKEN,
    vonageSignatureSecret: e.VONAGE_SIGNATURE_SECRET,
    providers: {
      deepgram: { apiKey: e.DEEPGRAM_API_KEY, baseUrl: e.DEEPGRAM_BASE_URL },
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      elevenlabs: { apiKey: e.ELEVENLABS_API_KEY, baseUrl: e.ELEVENLABS_BASE_URL, websocket: e.ELEVENLABS_WEBSOCKET },
    },
    heartbeatIntervalMs: e.GATEWAY_HEARTBEAT_INTERVAL_MS,
    ttsFirstByteTimeoutMs: e.TTS_FIRST_BYTE_TIMEOUT_MS,
    dataDir: e.DATA_DIR,
    recordings,
    recordingEncoderWorkers: e.RECORDING_ENCODER_WORKERS,
    pipelineThreads: e.PIPELINE_THREADS,
    metricsToken: e.METRICS_TOKEN,
    maxCalls: e.GATEWAY_MAX_CALLS,
    overloadLagMs: e.GATEWAY_OVERLOAD_LAG_MS,
    drainTimeoutMs: e.GATEWAY_DRAIN_TIMEOUT_MS,
    heapGrowingPercent: e.GATEWAY_HEAP_GROWING_PERCENT,
    heapGrowingNodeFlag: explicitHeapGrowingFlag({ execArgv: process.execArgv, nodeOptions: env['NODE_OPTIONS'] }),
  });
}
