import { acceptJsonOnly } from './http/json-body.js';
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, serializerCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { OutboundGuard, SUBJECTS, createObjectStore, newId } from '@vap/shared';
import type { Bus, ObjectStore } from '@vap/shared';
import type { ControlPlaneConfig } from './config.js';
import type { Database } from './db/database.js';
import './http/fastify-types.js';
import { registerErrorDocs } from './http/docs.js';
import { registerProblemHandlers } from './http/problem.js';
import { clientErrorProblem, frameworkErrorProblem, refuseUnstorableText } from './http/input-guards.js';
import { openApiTransform } from './http/openapi.js';
import { validatorCompiler } from './http/validation.js';
import { agentRoutes } from './modules/agents/routes.js';
import { AgentRepository } from './modules/agents/repository.js';
import { AgentService } from './modules/agents/service.js';
import { ApiKeyRepository } from './modules/api-keys/repository.js';
import { apiKeyRoutes } from './modules/api-keys/routes.js';
import { ApiKeyService } from './modules/api-keys/service.js';
import { registerAccessControl } from './modules/auth/access-control.js';
import { ApiKeyCache } from './modules/auth/api-key-cache.js';
import { Authenticator } from './modules/auth/authenticator.js';
import { ACCESS_TOKEN_AUDIENCE, ACCESS_TOKEN_TTL_SECONDS, AccessTokens } from './modules/auth/access-tokens.js';
import { JwtKeys } from './modules/auth/jwt-keys.js';
import { LoginService } from './modules/auth/login-service.js';
import { LoginThrottle } from './modules/auth/login-throttle.js';
import { MfaTokens } from './modules/auth/mfa-tokens.js';
import { sessionRoutes } from './modules/auth/session-routes.js';
import { SessionService } from './modules/auth/session-service.js';
import { ConversationRepository } from './modules/conversations/repository.js';
import { knowledgeBaseRoutes } from './modules/knowledge-base/routes.js';
import { createKnowledgeBase } from './modules/knowledge-base/runtime.js';
import type { KnowledgeBase } from './modules/knowledge-base/runtime.js';
import { KnowledgeBaseService } from './modules/knowledge-base/service.js';
import { mfaEnrolmentRoutes } from './modules/mfa/enrolment-routes.js';
import { MfaEnrolmentService } from './modules/mfa/enrolment-service.js';
import { mfaLoginRoutes } from './modules/mfa/login-routes.js';
import { MfaLoginService } from './modules/mfa/login-service.js';
import { MfaRepository } from './modules/mfa/repository.js';
import { conversationRoutes } from './modules/conversations/routes.js';
import { ConversationService } from './modules/conversations/service.js';
import { RecordingLinks } from './modules/conversations/recording-links.js';
import { RecordingRepository } from './modules/conversations/recording-repository.js';
import { recordingFileRoutes, recordingRoutes } from './modules/conversations/recording-routes.js';
import { RecordingService } from './modules/conversations/recording-service.js';
import { registerIdempotency } from './modules/idempotency/idempotency-hooks.js';
import { ControlPlaneMetrics } from './modules/metrics/control-plane-metrics.js';
import { registerMetrics } from './modules/metrics/metrics-routes.js';
import { IdempotencyStore } from './modules/idempotency/idempotency-store.js';
import { RateLimiter } from './modules/rate-limit/rate-limiter.js';
import { twilioWebhookRoutes } from './modules/telephony/twilio-webhook-routes.js';
import { createTelephonyProviders } from './modules/telephony/providers/index.js';
import type { TelephonyProviders } from './modules/telephony/providers/index.js';
import { PhoneNumberRepository } from './modules/telephony/phone-number-repository.js';
import { phoneNumberRoutes } from './modules/telephony/phone-number-routes.js';
import { PhoneNumberService } from './modules/telephony/phone-number-service.js';
import { messagingRoutes } from './modules/messaging/routes.js';
import type { TelegramBotApi } from './modules/messaging/telegram-bot-api.js';
import type { AnalysisLlms } from './modules/conversations/analysis-llm.js';
import { vonageWebhookRoutes } from './modules/telephony/vonage-webhook-routes.js';
import { telnyxWebhookRoutes } from './modules/telephony/telnyx-webhook-routes.js';
import { EventOutbox } from './modules/webhooks/event-outbox.js';
import { WebhookRepository } from './modules/webhooks/repository.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { WebhookService } from './modules/webhooks/service.js';
import { loadSecretKey } from './secret-box.js';
import { createMailer } from './mail/create-mailer.js';
import type { Mailer } from './mail/mailer.js';
import { UserRepository } from './modules/users/repository.js';
import { invitationAcceptRoutes, userRoutes } from './modules/users/routes.js';
import { UserService } from './modules/users/service.js';
import type { SecretBox } from './secret-box.js';

export interface AppDeps {
  database: Database;
  bus: Bus;
  secrets: SecretBox;
  logger: Logger;
  /** Clock for rate-limit windows (tests move it). */
  now?: () => number;
  /** Twilio Auth Token for webhook signatures (`loadTwilioAuthToken`); default TWILIO_AUTH_TOKEN, else every webhook is refused. */
  twilioAuthToken?: string;
  /** Vonage signed-webhook secret (`loadVonageSignatureSecret`); default VONAGE_SIGNATURE_SECRET, else every Vonage webhook is refused. */
  vonageSignatureSecret?: string;
  /** Telnyx webhook public key (`loadTelnyxWebhookKey`: base64 raw Ed25519); default TELNYX_PUBLIC_KEY, else every Telnyx webhook is refused. */
  telnyxPublicKey?: string;
  /** The LLM endpoint messaging replies run on (the control plane's analysis LLMs); default one started from the config on first use. */
  messagingLlms?: AnalysisLlms;
  /** The Telegram bot replies go out through and the webhook secret (`startTelegram`); default from TELEGRAM_* (no simulator). */
  telegram?: { bot: TelegramBotApi | null; webhookSecret: string | undefined };
  /** Where replays wake the local webhook dispatcher; default a fresh one (no dispatcher). */
  outbox?: EventOutbox;
  /** The recording store (one per process); default the configured one (`config.recordings`). */
  recordings?: ObjectStore;
  /** The secret key local recording links are signed with (derived); default `loadSecretKey` of the config. */
  secretKey?: Buffer;
  /** Outgoing email (invitations); default `createMailer` of the config, closed with the app. */
  mailer?: Mailer;
  /** Served at `GET /metrics` with the process metrics; default a fresh set (the dispatcher and job runner report into the one given). */
  metrics?: ControlPlaneMetrics;
  /**
   * The carriers' number APIs (`startTelephonyProviders`: simulators in development without
   * keys). Routes take `deps.telephony ?? createTelephonyProviders(config.carrierApis, { errors:
   * metrics.telephonyApiErrors })`: a carrier without credentials is then not configured.
   * Tests pass one on simulators (`startCarrierSimulators().config`).
   */
  telephony?: TelephonyProviders;
  /** The knowledge base's index, embedder and parsers (one per process, shared with its indexing job); default one on the recording store, closed with the app. */
  knowledgeBase?: KnowledgeBase;
}

/** How long a replica trusts an API key lookup (revocations apply at once regardless). */
const API_KEY_CACHE_TTL_MS = 5_000;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the control-plane HTTP app without listening (tests use `app.inject()`). */
export async function buildApp(config: ControlPlaneConfig, deps: AppDeps): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    trustProxy: config.trustProxy,
    bodyLimit: 1024 * 1024,
    // An inbound X-Request-Id is honoured only behind a trusted proxy (STYLE.md §8).
    genReqId: (req) => {
      const inbound = req.headers['x-request-id'];
      return config.trustProxy && typeof inbound === 'string' && REQUEST_ID.test(inbound) ? inbound : newId('trace');
    },
    logController: new LogController({ requestIdLogLabel: 'reqId', disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
    frameworkErrors: frameworkErrorProblem({ 'X-Api-Version': '1' }),
    clientErrorHandler: clientErrorProblem,
  });
  app.decorate('docsUrl', config.docsUrl);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerProblemHandlers(app);
  refuseUnstorableText(app);
  const metrics = deps.metrics ?? new ControlPlaneMetrics();
  registerMetrics(app, { metrics, token: config.metricsToken });

  // Bodies are JSON; an empty body counts as no body, so `{}`-less action POSTs work.
  // Only JSON is accepted (uploads add multipart where they need it); anything else is a 415.
  acceptJsonOnly(app);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Voice Agent Platform API',
        version: '1',
        description: `Errors are RFC 7807 problem documents; their types are described at ${config.docsUrl}/errors. While the database is unreachable any operation may answer 503 \`unavailable\` with \`Retry-After\`. Every operation lists the API-key scope it requires under \`x-required-scope\` (users hold the scopes their role allows), a permission beyond it under \`x-required-permission\`, and a right only signed-in users can hold under \`x-required-right\` (API keys get 403 there).`,
      },
      servers: [{ url: config.publicUrl }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (svc_live_… or svc_sb_…) or a user access token' } } },
    },
    transform: openApiTransform(jsonSchemaTransform),
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs/api', uiConfig: { url: '/api/v1/openapi.json' } as Record<string, unknown> });

  const pool = deps.database.pool;
  const now = deps.now ?? Date.now;
  // Login sessions: signing keys shared through the database (a retired key verifies a little
  // longer than a token lives plus the key cache), sessions, MFA tokens and the login throttle.
  const jwtKeys = new JwtKeys({ pool, secrets: deps.secrets, now, retiredKeyGraceMs: (ACCESS_TOKEN_TTL_SECONDS + 120) * 1000 });
  const accessTokens = new AccessTokens(jwtKeys, { issuer: config.publicUrl, audience: ACCESS_TOKEN_AUDIENCE, now });
  const sessions = new SessionService({ db: deps.database.db, tokens: accessTokens, now, refreshTokenTtlMs: config.auth.refreshTokenTtlMs, sessionMaxAgeMs: config.auth.sessionMaxAgeMs });
  const mfaTokens = new MfaTokens(deps.database.db, { now });
  const login = new LoginService({ db: deps.database.db, sessions, mfaTokens, throttle: new LoginThrottle(pool, config.auth.login, now) });
  // API keys are looked up once per few seconds per replica; a revocation drops the cached
  // lookup here at once and on the other replicas through the bus (apiKeyChanged).
  const authenticator = new Authenticator(pool, { tokens: accessTokens, now }, new ApiKeyCache({ ttlMs: API_KEY_CACHE_TTL_MS, maxEntries: 10_000 }));
  const keyChanges = deps.bus.subscribe('apiKeyChanged', SUBJECTS.apiKeyChanged.wildcard, (msg) => authenticator.forgetKey(msg.payload.keyId));
  const rateLimiter = new RateLimiter(pool, now);
  app.addHook('onClose', async () => {
    await keyChanges.close();
    await rateLimiter.close();
  });
  registerAccessControl(app, { authenticator, rateLimiter, limits: config.rateLimits, now });
  registerIdempotency(app, new IdempotencyStore(pool));
  registerErrorDocs(app);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    try {
      await pool.query('select 1');
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  const agents = new AgentService({ repo: new AgentRepository(deps.database.db), bus: deps.bus, secrets: deps.secrets });
  const recordingStore = deps.recordings ?? createObjectStore(config.recordings);
  const conversations = new ConversationService({ repo: new ConversationRepository(deps.database.db), recordings: recordingStore });
  const recordings = new RecordingService({
    repo: new RecordingRepository(deps.database.db),
    store: recordingStore,
    links: new RecordingLinks(deps.secretKey ?? loadSecretKey(config.secretEncryptionKey, config.dataDir, config.appEnv), config.publicUrl),
    now,
  });
  const outbox = deps.outbox ?? new EventOutbox();
  const webhooks = new WebhookService({
    repo: new WebhookRepository(deps.database.db),
    secrets: deps.secrets,
    guard: new OutboundGuard({ allow: config.outboundAllowlist }),
    appEnv: config.appEnv,
    wake: () => outbox.wake(),
    now,
  });
  const knowledgeBase = deps.knowledgeBase ?? (await createKnowledgeBase({ pool, store: recordingStore, embedding: config.knowledgeBase.embedding, dataDir: config.dataDir, log: deps.logger.child({ module: 'knowledge-base' }) }));
  if (!deps.knowledgeBase) app.addHook('onClose', async () => knowledgeBase.close());
  const knowledgeBaseService = new KnowledgeBaseService({ db: deps.database.db, kb: knowledgeBase, bus: deps.bus, log: deps.logger.child({ module: 'knowledge-base' }) });
  const mailer = deps.mailer ?? createMailer(config.mail, config.dataDir, deps.logger.child({ module: 'mail' }));
  if (!deps.mailer) app.addHook('onClose', async () => mailer.close());
  const users = new UserService({ repo: new UserRepository(deps.database.db), mailer, sessions, publicUrl: config.publicUrl, log: deps.logger.child({ module: 'users' }), now });
  const apiKeys = new ApiKeyService({
    repo: new ApiKeyRepository(deps.database.db),
    defaultEnvironment: config.appEnv === 'production' ? 'live' : 'sandbox',
    onRevoked: async (tenantId, keyId) => {
      authenticator.forgetKey(keyId);
      await deps.bus.publish('apiKeyChanged', SUBJECTS.apiKeyChanged.subject(tenantId, keyId), { tenantId, keyId, change: 'revoked', at: new Date().toISOString() });
    },
  });
  const phoneNumbers = new PhoneNumberService({
    repo: new PhoneNumberRepository(deps.database.db),
    carriers: deps.telephony ?? createTelephonyProviders(config.carrierApis, { errors: metrics.telephonyApiErrors }),
    publicUrl: config.publicUrl,
    log: deps.logger.child({ module: 'phone-numbers' }),
    now,
  });
  const mfaRepo = new MfaRepository(deps.database.db);
  const relyingParty = { rpId: config.mfa.webauthnRpId, rpName: config.mfa.issuer, origins: config.mfa.webauthnOrigins };
  const mfaEnrolment = new MfaEnrolmentService({ repo: mfaRepo, secrets: deps.secrets, rp: relyingParty, now });
  const mfaLogin = new MfaLoginService({ repo: mfaRepo, tokens: mfaTokens, sessions, secrets: deps.secrets, rp: relyingParty, now, log: deps.logger.child({ module: 'mfa' }) });

  await app.register(recordingFileRoutes, { service: recordings });
  await app.register(telnyxWebhookRoutes, { db: deps.database.db, publicKey: deps.telnyxPublicKey ?? config.telnyx.publicKey, mediaGatewayPublicUrl: config.mediaGatewayPublicUrl, secrets: deps.secrets, now });
  await app.register(vonageWebhookRoutes, { db: deps.database.db, signatureSecret: deps.vonageSignatureSecret ?? config.vonage.signatureSecret, mediaGatewayPublicUrl: config.mediaGatewayPublicUrl, now });
  await app.register(twilioWebhookRoutes, { db: deps.database.db, authToken: deps.twilioAuthToken ?? config.twilio.authToken, publicUrl: config.publicUrl, mediaGatewayPublicUrl: config.mediaGatewayPublicUrl, now });
  await app.register(messagingRoutes, {
    database: deps.database,
    log: deps.logger.child({ module: 'messaging' }),
    ...(deps.messagingLlms ? { llms: deps.messagingLlms } : {}),
    openai: config.openai,
    twilioAuthToken: deps.twilioAuthToken ?? config.twilio.authToken,
    publicUrl: config.publicUrl,
    ...(deps.telegram ? { telegram: deps.telegram } : {}),
    telegramSettings: config.telegram,
    now,
  });
  await app.register(
    async (api) => {
      api.get('/openapi.json', { config: { scope: null }, schema: { hide: true } }, async () => app.swagger());
      await api.register(agentRoutes, { service: agents });
      await api.register(apiKeyRoutes, { service: apiKeys });
      await api.register(mfaEnrolmentRoutes, { service: mfaEnrolment });
      await api.register(mfaLoginRoutes, { service: mfaLogin });
      await api.register(sessionRoutes, { login, sessions, keys: jwtKeys });
      await api.register(conversationRoutes, { service: conversations });
      await api.register(recordingRoutes, { service: recordings });
      await api.register(webhookRoutes, { service: webhooks });
      await api.register(phoneNumberRoutes, { service: phoneNumbers });
      await api.register(userRoutes, { service: users });
      await api.register(invitationAcceptRoutes, { service: users });
      await api.register(knowledgeBaseRoutes, { service: knowledgeBaseService, tempDir: knowledgeBase.tempDir });
    },
    { prefix: '/api/v1' },
  );

  return app;
}
