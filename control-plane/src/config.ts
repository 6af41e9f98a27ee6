import { z } from 'zod';
import { OBJECT_STORE_ENV_VARS, ObjectStoreConfigError, OutboundGuard, objectStoreConfigFromEnv } from '@vap/shared';
import type { ObjectStoreConfig } from '@vap/shared';

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
const optionalString = z.string().trim().min(1).optional().or(z.literal('').transform(() => undefined));
const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

/**
 * Every environment variable the control plane reads, with its default. `.env.example`
 * lists the same names (a test keeps them in step). Defaults are the one-machine mode.
 */
export const configSchema = z.object({
  APP_ENV: z.enum(['development', 'production']).default('development'),
  HOST: z.string().default('127.0.0.1'),
  PORT: int(3000, 0, 65535),
  PUBLIC_URL: optionalString,
  DOCS_URL: optionalString,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: bool(false),
  // Bearer token GET /metrics requires (shared with the media gateway); unset: public like /healthz.
  METRICS_TOKEN: optionalString,
  DATABASE_URL: optionalString,
  DB_POOL_SIZE: int(10, 1, 200),
  DATA_DIR: z.string().default('.data'),
  EMBEDDED_PG_PORT: int(54329, 1024, 65535),
  NATS_URL: optionalString,
  NATS_SUBJECT_PREFIX: z.string().regex(/^[A-Za-z0-9_-]*$/, 'must be one token of letters, digits, _ and -').default(''),
  SECRET_ENCRYPTION_KEY: optionalString.refine((v) => v === undefined || Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded'),
  RATE_LIMIT_STARTER: int(60, 1, 1_000_000),
  RATE_LIMIT_PROFESSIONAL: int(120, 1, 1_000_000),
  RATE_LIMIT_BUSINESS: int(300, 1, 1_000_000),
  RATE_LIMIT_ENTERPRISE: int(1000, 1, 1_000_000),
  RATE_LIMIT_ANONYMOUS: int(60, 1, 1_000_000),
  HOUSEKEEPING_INTERVAL_SECONDS: int(300, 1, 86_400),
  CALL_WATCHDOG_INTERVAL_MS: int(2000, 100, 60_000),
  BOOTSTRAP_TENANT_NAME: z.string().min(1).max(100).default('Default'),
  BOOTSTRAP_TENANT_PLAN: z.enum(['starter', 'professional', 'business', 'enterprise']).default('enterprise'),
  BOOTSTRAP_ADMIN_EMAIL: optionalString.pipe(z.email().optional()),
  BOOTSTRAP_ADMIN_PASSWORD: optionalString.pipe(z.string().min(12, 'must be at least 12 characters').optional()),
  BOOTSTRAP_API_KEY: optionalString.pipe(z.string().regex(/^svc_(live|sb)_[A-Za-z0-9_-]{43,}$/, 'must look like svc_live_<43+ base64url chars> or svc_sb_<…>').optional()),
  MFA_ISSUER: z.string().trim().min(1).max(100, 'must be at most 100 characters').default('Voice Agent Platform'),
  WEBAUTHN_RP_ID: optionalString.pipe(z.string().regex(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, 'must be a lowercase domain name such as example.com (no scheme, port or path)').optional()),
  WEBAUTHN_ORIGIN: optionalString.superRefine((v, ctx) => {
    for (const entry of v === undefined ? [] : splitList(v)) {
      if (webOrigin(entry) === null) ctx.addIssue({ code: 'custom', message: `"${entry}" is not an origin such as https://app.example.com (scheme, host and port only)` });
    }
  }),
  TWILIO_ACCOUNT_SID: optionalString.pipe(z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'must look like AC followed by 32 hex characters').optional()),
  TWILIO_AUTH_TOKEN: optionalString,
  // Carrier REST APIs for number search, purchase, release and pricing (modules/telephony/providers).
  TWILIO_API_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.twilio.com'),
  TWILIO_PRICING_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://pricing.twilio.com'),
  TELNYX_API_KEY: optionalString,
  TELNYX_API_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.telnyx.com/v2'),
  TELNYX_CONNECTION_ID: optionalString,
  VONAGE_API_KEY: optionalString,
  VONAGE_API_SECRET: optionalString,
  VONAGE_API_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://rest.nexmo.com'),
  VONAGE_APPLICATIONS_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.nexmo.com'),
  VONAGE_APPLICATION_ID: optionalString,
  TELEPHONY_API_TIMEOUT_MS: int(8000, 100, 120_000),
  VONAGE_SIGNATURE_SECRET: optionalString,
  // Telnyx's webhook-signing public key: base64 of the raw 32-byte Ed25519 key, as the portal shows it.
  TELNYX_PUBLIC_KEY: optionalString.refine((v) => v === undefined || (Buffer.from(v, 'base64').length === 32 && Buffer.from(v, 'base64').toString('base64') === v), 'must be the base64 of a 32-byte Ed25519 public key'),
  MEDIA_GATEWAY_PUBLIC_URL: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }).default('ws://127.0.0.1:3001'),
  OUTBOUND_ALLOWLIST: optionalString.superRefine((v, ctx) => {
    if (v === undefined || v.trim().toLowerCase() === 'none') return;
    try {
      new OutboundGuard({ allow: splitList(v) });
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : 'invalid entry' });
    }
  }),
  WEBHOOK_DISPATCHER: bool(true),
  WEBHOOK_CONCURRENCY: int(32, 1, 1000),
  WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: int(4, 1, 100),
  WEBHOOK_POLL_INTERVAL_MS: int(2000, 50, 60_000),
  WEBHOOK_LOG_RETENTION_DAYS: int(30, 1, 3650),
  JOBS_CONCURRENCY: int(4, 1, 256),
  JOBS_POLL_INTERVAL_MS: int(2000, 50, 60_000),
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional().or(z.literal('').transform(() => undefined)),
  TELEGRAM_BOT_TOKEN: optionalString.pipe(z.string().regex(/^\d+:[A-Za-z0-9_-]+$/, 'must look like a bot token (123456789:AA…)').optional()),
  // Telegram allows 1-256 characters from A-Z a-z 0-9 _ - (reference/messaging.md §1.1).
  TELEGRAM_WEBHOOK_SECRET: optionalString.pipe(z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, 'must be 1 to 256 characters from A-Z a-z 0-9 _ -').optional()),
  TELEGRAM_API_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.telegram.org'),
  KB_EMBEDDING_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional().or(z.literal('').transform(() => undefined)),
  KB_EMBEDDING_API_KEY: optionalString,
  KB_EMBEDDING_MODEL: optionalString,
  SMTP_URL: z.url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' }).optional().or(z.literal('').transform(() => undefined)),
  MAIL_FROM: optionalString.pipe(z.string().regex(/@/, 'must be an address such as "Voice Agent Platform <no-reply@example.com>"').optional()),
  AUTH_REFRESH_TOKEN_DAYS: int(14, 1, 365),
  AUTH_SESSION_MAX_DAYS: int(30, 1, 365),
  AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT: int(5, 1, 1000),
  AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS: int(50, 1, 1_000_000),
  AUTH_LOGIN_LOCK_MINUTES: int(15, 1, 1440),
  ADMIN_HOST: z.string().default('127.0.0.1'),
  ADMIN_PORT: int(3002, 0, 65535),
  ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  // The recording store: read and checked by objectStoreConfigFromEnv (shared with the gateway).
  ...(Object.fromEntries(OBJECT_STORE_ENV_VARS.map((name) => [name, z.string().optional()])) as Record<(typeof OBJECT_STORE_ENV_VARS)[number], z.ZodOptional<z.ZodString>>),
});

export type Env = z.infer<typeof configSchema>;

/** The parsed, frozen configuration passed to every factory. */
export interface ControlPlaneConfig {
  appEnv: 'development' | 'production';
  host: string;
  port: number;
  publicUrl: string;
  docsUrl: string;
  logLevel: Env['LOG_LEVEL'];
  trustProxy: boolean;
  /** `GET /metrics` requires `Authorization: Bearer <token>` when set; public when undefined. */
  metricsToken?: string | undefined;
  databaseUrl: string | undefined;
  dbPoolSize: number;
  dataDir: string;
  embeddedPgPort: number;
  natsUrl: string | undefined;
  /** Put in front of every bus subject (installations sharing one NATS cluster). */
  natsSubjectPrefix: string;
  secretEncryptionKey: Buffer | undefined;
  rateLimits: { starter: number; professional: number; business: number; enterprise: number; anonymous: number };
  housekeepingIntervalMs: number;
  /** How often the lost-gateway watchdog looks for calls of gateways that stopped sending heartbeats. */
  callWatchdogIntervalMs: number;
  bootstrap: {
    tenantName: string;
    tenantPlan: Env['BOOTSTRAP_TENANT_PLAN'];
    adminEmail: string | undefined;
    adminPassword: string | undefined;
    apiKey: string | undefined;
  };
  twilio: {
    accountSid: string | undefined;
    /** Unset: sandbox mode, with a generated token (see `loadTwilioAuthToken`). */
    authToken: string | undefined;
  };
  vonage: {
    /** Signed-webhook secret (HS256). Unset: a generated sandbox secret in development (`loadVonageSignatureSecret`), none in production. */
    signatureSecret: string | undefined;
  };
  telnyx: {
    /** Base64 raw Ed25519 key webhooks are verified with. Unset: sandbox key pair in development (`loadTelnyxWebhookKey`), none in production. */
    publicKey: string | undefined;
  };
  /**
   * The carriers' number APIs (search, buy, release, pricing): base URLs (a simulator's in
   * tests) and credentials; a carrier without credentials is simulated in development and
   * not configured in production (`startTelephonyProviders`). `timeoutMs` is per call.
   */
  carrierApis: {
    twilio: { accountSid: string | undefined; authToken: string | undefined; apiBaseUrl: string; pricingBaseUrl: string };
    telnyx: { apiKey: string | undefined; apiBaseUrl: string; connectionId: string | undefined };
    vonage: { apiKey: string | undefined; apiSecret: string | undefined; apiBaseUrl: string; applicationsBaseUrl: string; applicationId: string | undefined };
    timeoutMs: number;
  };
  /** Public base of the media gateway for stream URLs (`wss://…` in production), no trailing slash. */
  mediaGatewayPublicUrl: string;
  /**
   * Second factors: the name authenticator apps and security keys show (TOTP issuer, WebAuthn
   * rpName), the WebAuthn RP ID (a domain) and the origins a FIDO2 ceremony may come from.
   */
  mfa: { issuer: string; webauthnRpId: string; webauthnOrigins: readonly string[] };
  /** Targets the outbound guard permits although private or loopback (see .env.example). */
  outboundAllowlist: readonly string[];
  webhooks: {
    dispatcher: boolean;
    concurrency: number;
    perWebhook: number;
    pollIntervalMs: number;
    logRetentionDays: number;
  };
  /** Durable background jobs (post-call analysis): handlers at once in this process, and the longest pause between looks at the queue (ms). */
  jobs: { concurrency: number; pollIntervalMs: number };
  /** OpenAI for post-call analysis; no key: an OpenAI simulator started by the control plane (sandbox). */
  openai: { apiKey: string | undefined; baseUrl: string | undefined };
  /**
   * Telegram bot: replies go out through the Bot API at `apiBaseUrl` with `botToken`; webhook
   * updates must carry `webhookSecret`. Unset token in development: a Bot API simulator
   * (sandbox); unset secret in development: one generated into DATA_DIR (`startTelegram`).
   */
  telegram: { botToken: string | undefined; webhookSecret: string | undefined; apiBaseUrl: string };
  /**
   * Knowledge-base embeddings: an OpenAI-compatible `/v1/embeddings` server when `baseUrl` is
   * set (then `model` is required), else the built-in local embedder (`model` unset).
   */
  knowledgeBase: { embedding: { baseUrl: string | undefined; apiKey: string | undefined; model: string | undefined } };
  /** Outgoing email (invitations): SMTP when `smtpUrl` is set, else captured as .eml files under DATA_DIR/mail. */
  mail: { smtpUrl: string | undefined; from: string };
  /**
   * Login sessions: refresh-token life and the absolute session life (ms); the login
   * throttle: failures per account and per address within `windowMs` that lock it for `lockMs`.
   */
  auth: {
    refreshTokenTtlMs: number;
    sessionMaxAgeMs: number;
    login: { accountMaxFailures: number; addressMaxFailures: number; windowMs: number; lockMs: number };
  };
  admin: {
    host: string;
    port: number;
    /** Unset: generated in development (see `loadAdminToken`); no admin server in production. */
    token: string | undefined;
  };
  /** Where call recordings are kept (the gateway writes them; links, serving and retention here). */
  recordings: ObjectStoreConfig;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Loopback, which development permits by default so a receiver on this machine works. */
export const DEVELOPMENT_ALLOWLIST: readonly string[] = ['127.0.0.0/8', '::1/128', 'localhost'];

function outboundAllowlist(raw: string | undefined, appEnv: 'development' | 'production'): string[] {
  if (raw === undefined) return appEnv === 'development' ? [...DEVELOPMENT_ALLOWLIST] : [];
  if (raw.trim().toLowerCase() === 'none') return [];
  return splitList(raw);
}

/** `scheme://host[:port]` of an http(s) URL that is nothing more, else null. */
function webOrigin(raw: string): string | null {
  try {
    const u = new URL(raw);
    if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.origin !== raw.replace(/\/$/, '')) return null;
    return u.origin;
  } catch {
    return null;
  }
}

/**
 * The WebAuthn relying party: RP ID default the PUBLIC_URL host, origins default the
 * PUBLIC_URL origin. Every origin's host must be the RP ID or under it (browsers refuse
 * anything else), so a mismatch is a configuration problem, not a login failure later.
 */
function relyingParty(rpIdRaw: string | undefined, originsRaw: string | undefined, publicUrl: string): { rpId: string; origins: string[] } | string {
  let base: URL;
  try {
    base = new URL(publicUrl);
  } catch {
    return 'PUBLIC_URL: must be a URL such as https://api.example.com';
  }
  const rpId = rpIdRaw ?? base.hostname;
  const origins = originsRaw === undefined ? [base.origin] : splitList(originsRaw).map((o) => webOrigin(o) ?? o);
  const outside = origins.filter((o) => {
    const host = new URL(o).hostname;
    return host !== rpId && !host.endsWith(`.${rpId}`);
  });
  if (outside.length > 0) return `WEBAUTHN_ORIGIN: ${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} not on the RP ID ${rpId} (WEBAUTHN_RP_ID) or a subdomain of it`;
  return { rpId, origins };
}

function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Parses an environment (default `process.env`), listing every problem at once. */
export function loadConfig(env: Record<string, string | undefined> = process.env): ControlPlaneConfig {
  const parsed = configSchema.safeParse(env);
  let recordings: ObjectStoreConfig | undefined;
  const storeProblems: string[] = [];
  try {
    recordings = objectStoreConfigFromEnv(env, parsed.data?.DATA_DIR ?? env.DATA_DIR ?? '.data');
  } catch (err) {
    if (!(err instanceof ObjectStoreConfigError)) throw err;
    storeProblems.push(...err.problems);
  }
  if (!parsed.success || recordings === undefined) {
    throw new ConfigError([...(parsed.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? []), ...storeProblems]);
  }
  const e = parsed.data;
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, '');
  const rp = relyingParty(e.WEBAUTHN_RP_ID, e.WEBAUTHN_ORIGIN, publicUrl);
  if (typeof rp === 'string') throw new ConfigError([rp]);
  if (e.KB_EMBEDDING_BASE_URL !== undefined && e.KB_EMBEDDING_MODEL === undefined) throw new ConfigError(['KB_EMBEDDING_MODEL: required with KB_EMBEDDING_BASE_URL (e.g. text-embedding-3-small)']);
  return Object.freeze({
    appEnv: e.APP_ENV,
    host: e.HOST,
    port: e.PORT,
    publicUrl,
    docsUrl: (e.DOCS_URL ?? `${publicUrl}/docs`).replace(/\/$/, ''),
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    metricsToken: e.METRICS_TOKEN,
    databaseUrl: e.DATABASE_URL,
    dbPoolSize: e.DB_POOL_SIZE,
    dataDir: e.DATA_DIR,
    embeddedPgPort: e.EMBEDDED_PG_PORT,
    natsUrl: e.NATS_URL,
    natsSubjectPrefix: e.NATS_SUBJECT_PREFIX,
    secretEncryptionKey: e.SECRET_ENCRYPTION_KEY ? Buffer.from(e.SECRET_ENCRYPTION_KEY, 'base64') : undefined,
    rateLimits: {
      starter: e.RATE_LIMIT_STARTER,
      professional: e.RATE_LIMIT_PROFESSIONAL,
      business: e.RATE_LIMIT_BUSINESS,
      enterprise: e.RATE_LIMIT_ENTERPRISE,
      anonymous: e.RATE_LIMIT_ANONYMOUS,
    },
    housekeepingIntervalMs: e.HOUSEKEEPING_INTERVAL_SECONDS * 1000,
    callWatchdogIntervalMs: e.CALL_WATCHDOG_INTERVAL_MS,
    bootstrap: {
      tenantName: e.BOOTSTRAP_TENANT_NAME,
      tenantPlan: e.BOOTSTRAP_TENANT_PLAN,
      adminEmail: e.BOOTSTRAP_ADMIN_EMAIL,
      adminPassword: e.BOOTSTRAP_ADMIN_PASSWORD,
      apiKey: e.BOOTSTRAP_API_KEY,
    },
    twilio: { accountSid: e.TWILIO_ACCOUNT_SID, authToken: e.TWILIO_AUTH_TOKEN },
    telnyx: { publicKey: e.TELNYX_PUBLIC_KEY },
    vonage: { signatureSecret: e.VONAGE_SIGNATURE_SECRET },
    carrierApis: Object.freeze({
      twilio: { accountSid: e.TWILIO_ACCOUNT_SID, authToken: e.TWILIO_AUTH_TOKEN, apiBaseUrl: e.TWILIO_API_BASE_URL.replace(/\/+$/, ''), pricingBaseUrl: e.TWILIO_PRICING_BASE_URL.replace(/\/+$/, '') },
      telnyx: { apiKey: e.TELNYX_API_KEY, apiBaseUrl: e.TELNYX_API_BASE_URL.replace(/\/+$/, ''), connectionId: e.TELNYX_CONNECTION_ID },
      vonage: { apiKey: e.VONAGE_API_KEY, apiSecret: e.VONAGE_API_SECRET, apiBaseUrl: e.VONAGE_API_BASE_URL.replace(/\/+$/, ''), applicationsBaseUrl: e.VONAGE_APPLICATIONS_BASE_URL.replace(/\/+$/, ''), applicationId: e.VONAGE_APPLICATION_ID },
      timeoutMs: e.TELEPHONY_API_TIMEOUT_MS,
    }),
    mediaGatewayPublicUrl: e.MEDIA_GATEWAY_PUBLIC_URL.replace(/\/$/, ''),
    mfa: Object.freeze({ issuer: e.MFA_ISSUER, webauthnRpId: rp.rpId, webauthnOrigins: Object.freeze(rp.origins) }),
    outboundAllowlist: Object.freeze(outboundAllowlist(e.OUTBOUND_ALLOWLIST, e.APP_ENV)),
    webhooks: {
      dispatcher: e.WEBHOOK_DISPATCHER,
      concurrency: e.WEBHOOK_CONCURRENCY,
      perWebhook: e.WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK,
      pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
      logRetentionDays: e.WEBHOOK_LOG_RETENTION_DAYS,
    },
    jobs: { concurrency: e.JOBS_CONCURRENCY, pollIntervalMs: e.JOBS_POLL_INTERVAL_MS },
    openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
    telegram: { botToken: e.TELEGRAM_BOT_TOKEN, webhookSecret: e.TELEGRAM_WEBHOOK_SECRET, apiBaseUrl: e.TELEGRAM_API_BASE_URL.replace(/\/+$/, '') },
    knowledgeBase: { embedding: { baseUrl: e.KB_EMBEDDING_BASE_URL, apiKey: e.KB_EMBEDDING_API_KEY, model: e.KB_EMBEDDING_MODEL } },
    mail: { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM ?? 'Voice Agent Platform <no-reply@localhost>' },
    auth: {
      refreshTokenTtlMs: e.AUTH_REFRESH_TOKEN_DAYS * 86_400_000,
      sessionMaxAgeMs: Math.max(e.AUTH_SESSION_MAX_DAYS, e.AUTH_REFRESH_TOKEN_DAYS) * 86_400_000,
      login: {
        accountMaxFailures: e.AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT,
        addressMaxFailures: e.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS,
        windowMs: e.AUTH_LOGIN_LOCK_MINUTES * 60_000,
        lockMs: e.AUTH_LOGIN_LOCK_MINUTES * 60_000,
      },
    },
    admin: { host: e.ADMIN_HOST, port: e.ADMIN_PORT, token: e.ADMIN_TOKEN },
    recordings: Object.freeze(recordings),
  });
}
