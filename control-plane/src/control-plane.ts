import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { OutboundGuard, S3ObjectStore, createObjectStore } from '@vap/shared';
import type { Bus, ObjectStore } from '@vap/shared';
import { startAdminServer } from './admin/admin-server.js';
import { buildApp } from './app.js';
import type { ControlPlaneConfig } from './config.js';
import { openDatabase, runMigrations } from './db/database.js';
import { createMailer } from './mail/create-mailer.js';
import type { Database } from './db/database.js';
import { startEmbeddedPostgres } from './db/embedded-postgres.js';
import type { EmbeddedDatabase } from './db/embedded-postgres.js';
import { startAuthPurge } from './modules/auth/auth-purge.js';
import { ANALYSIS_JOB, AnalysisJobHandler } from './modules/conversations/analysis-job.js';
import { startAnalysisLlms } from './modules/conversations/analysis-llm.js';
import { MessagingRepository } from './modules/messaging/repository.js';
import { THREAD_IDLE_MS } from './modules/messaging/service.js';
import { startTelegram } from './modules/messaging/telegram-runtime.js';
import { startCallHandling } from './modules/conversations/call-handlers.js';
import { RecordingRetention } from './modules/conversations/recording-retention.js';
import { CARRIER_CALL_EVENT_RETENTION_DAYS, CarrierCallEventStore } from './modules/telephony/carrier-call-event-store.js';
import { Housekeeping } from './modules/housekeeping/housekeeping.js';
import { startKnowledgeRetrieval } from './modules/knowledge-base/retrieval.js';
import { IdempotencyStore } from './modules/idempotency/idempotency-store.js';
import { JobRunner } from './modules/jobs/job-runner.js';
import { KB_INDEX_JOB, KbIndexingJob } from './modules/knowledge-base/indexing-job.js';
import { createKnowledgeBase } from './modules/knowledge-base/runtime.js';
import { ControlPlaneMetrics } from './modules/metrics/control-plane-metrics.js';
import { RateLimiter } from './modules/rate-limit/rate-limiter.js';
import { loadTwilioAuthToken } from './modules/telephony/twilio-credentials.js';
import { startTelephonyProviders } from './modules/telephony/providers/index.js';
import type { TwilioAuth } from './modules/telephony/twilio-credentials.js';
import { loadVonageSignatureSecret } from './modules/telephony/vonage-credentials.js';
import type { VonageSignature } from './modules/telephony/vonage-credentials.js';
import { loadTelnyxWebhookKey } from './modules/telephony/telnyx-credentials.js';
import type { TelnyxWebhookKey } from './modules/telephony/telnyx-credentials.js';
import { bootstrap } from './modules/tenants/bootstrap.js';
import type { BootstrapResult } from './modules/tenants/bootstrap.js';
import { EventOutbox } from './modules/webhooks/event-outbox.js';
import { WebhookDispatcher } from './modules/webhooks/webhook-dispatcher.js';
import { SecretBox, loadSecretKey } from './secret-box.js';

/** `User-Agent` of webhook deliveries. */
export const WEBHOOK_USER_AGENT = 'VoiceAgentPlatform-Webhooks/1';

/** A running control plane. */
export interface ControlPlane {
  app: FastifyInstance;
  database: Database;
  /** Where it listens, e.g. http://127.0.0.1:3000. */
  url: string;
  /** Which Postgres: the configured one or the embedded one. */
  databaseMode: 'external' | 'embedded';
  /** Credentials created on this start (empty database only). */
  bootstrap: BootstrapResult | null;
  /** The admin API (telephony debug): its URL and where its token comes from; null when not started (production without ADMIN_TOKEN). */
  admin: { url: string; tokenSource: string } | null;
  /** The Twilio Auth Token webhooks are checked with (sandbox: generated into DATA_DIR); hand it to the media gateway. */
  twilio: TwilioAuth;
  /** The secret Vonage webhook JWTs are checked with (development sandbox: generated into DATA_DIR); simulators sign with it. */
  vonage: VonageSignature;
  /** The public key Telnyx webhooks are verified with (development sandbox: a key pair generated into DATA_DIR). */
  telnyx: TelnyxWebhookKey;
  /** The recording store (`config.recordings`): links, local serving, retention and conversation deletes use this one. */
  recordings: ObjectStore;
  close(): Promise<void>;
}

/**
 * Opens the database (DATABASE_URL, or an embedded Postgres under DATA_DIR), applies
 * migrations, bootstraps an empty database, starts housekeeping and listens.
 */
export async function startControlPlane(config: ControlPlaneConfig, deps: { bus: Bus; logger: Logger }): Promise<ControlPlane> {
  const log = deps.logger;
  let embedded: EmbeddedDatabase | undefined;
  if (!config.databaseUrl) {
    log.info({ dataDir: config.dataDir }, 'DATABASE_URL not set: starting embedded Postgres');
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, log });
  }
  const database = openDatabase(config.databaseUrl ?? embedded!.url, config.dbPoolSize);
  try {
    await runMigrations(database);
    const boot = await bootstrap(database, config, log);
    const secretKey = loadSecretKey(config.secretEncryptionKey, config.dataDir, config.appEnv);
    const secrets = new SecretBox(secretKey);
    const twilio = loadTwilioAuthToken(config.twilio.authToken, config.dataDir);
    const vonage = loadVonageSignatureSecret(config.vonage.signatureSecret, config.dataDir, config.appEnv);
    const telnyx = loadTelnyxWebhookKey(config.telnyx.publicKey, config.dataDir, config.appEnv);
    const outbox = new EventOutbox();
    const recordings = createObjectStore(config.recordings);
    // Invitation emails: SMTP_URL, or captured as .eml files under DATA_DIR/mail.
    const mailer = createMailer(config.mail, config.dataDir, log.child({ module: 'mail' }));
    log.info({ mail: mailer.describe() }, 'outgoing mail ready');
    // One metrics registry for the API, the webhook dispatcher and the job runner (GET /metrics).
    const metrics = new ControlPlaneMetrics();
    // Carrier number APIs: live with credentials; in development without them, simulators started here (sandbox).
    const telephony = await startTelephonyProviders(config, { errors: metrics.telephonyApiErrors });
    log.info({ carriers: telephony.describe() }, 'carrier number APIs ready');
    // Knowledge base: uploads are stored beside recordings (keys knowledge-base/…) and indexed by a durable job.
    const knowledgeBase = await createKnowledgeBase({ pool: database.pool, store: recordings, embedding: config.knowledgeBase.embedding, dataDir: config.dataDir, log: log.child({ module: 'knowledge-base' }) });
    // Post-call analysis and messaging replies on OpenAI (OPENAI_API_KEY) or a simulator started here (sandbox).
    const analysisLlms = await startAnalysisLlms(config.openai);
    log.info({ llm: analysisLlms.describe() }, 'post-call analysis ready');
    // Telegram replies: the Bot API (TELEGRAM_BOT_TOKEN) or a simulator started here (sandbox).
    const telegram = await startTelegram(config.telegram, { appEnv: config.appEnv, dataDir: config.dataDir });
    log.info({ telegram: telegram.describe(), secret: telegram.secretSource }, 'telegram messaging ready');
    const app = await buildApp(config, { database, bus: deps.bus, secrets, logger: log, twilioAuthToken: twilio.token, vonageSignatureSecret: vonage.secret, telnyxPublicKey: telnyx.publicKey, outbox, recordings, secretKey, mailer, metrics, telephony, knowledgeBase, messagingLlms: analysisLlms, telegram });
    const dispatcher = config.webhooks.dispatcher
      ? new WebhookDispatcher({
          pool: database.pool,
          secrets,
          guard: new OutboundGuard({ allow: config.outboundAllowlist }),
          log: log.child({ module: 'webhooks' }),
          userAgent: WEBHOOK_USER_AGENT,
          concurrency: config.webhooks.concurrency,
          perWebhook: config.webhooks.perWebhook,
          pollIntervalMs: config.webhooks.pollIntervalMs,
          metrics,
        })
      : undefined;
    if (dispatcher) outbox.onWake(() => dispatcher.wake());
    const housekeeping = new Housekeeping({
      idempotency: new IdempotencyStore(database.pool),
      webhookLog: { pool: database.pool, retentionDays: config.webhooks.logRetentionDays },
      rateLimiter: new RateLimiter(database.pool),
      recordingRetention: new RecordingRetention({ db: database.db, store: recordings, log: log.child({ module: 'recordings' }) }),
      carrierCallEvents: { store: new CarrierCallEventStore(database.db), retentionDays: CARRIER_CALL_EVENT_RETENTION_DAYS },
      messagingThreads: { repo: new MessagingRepository(database.db), idleMs: THREAD_IDLE_MS },
      log,
      intervalMs: config.housekeepingIntervalMs,
    });
    const url = await app.listen({ host: config.host, port: config.port });
    const admin = await startAdminServer(config, { database, logger: log, telephony, secrets }).catch(async (err: unknown) => {
      await app.close();
      throw err;
    });
    housekeeping.start();
    // Ended login sessions, old MFA challenges and idle login throttles (modules/auth).
    const authPurge = startAuthPurge({ pool: database.pool, log: log.child({ module: 'auth' }), intervalMs: config.housekeepingIntervalMs, throttleWindowMs: config.auth.login.windowMs });
    // Bus handlers of live calls and the lost-gateway watchdog (modules/conversations).
    const calls = startCallHandling({ db: database.db, bus: deps.bus, secrets, log, outbox, watchdog: { intervalMs: config.callWatchdogIntervalMs } });
    // Knowledge-base passages for the user turns of live calls (knowledge.retrieve, modules/knowledge-base/retrieval.ts).
    // Shares the API's index (one fallback vector cache per process) and embedder (the documents' model).
    const knowledgeRetrieval = await startKnowledgeRetrieval({ bus: deps.bus, pool: database.pool, log, embedding: config.knowledgeBase.embedding, index: knowledgeBase.index, embedder: knowledgeBase.embedder });
    // Durable background jobs: post-call analysis (analysisLlms, started before the app: messaging replies share it).
    const jobs = new JobRunner({ pool: database.pool, log: log.child({ module: 'jobs' }), concurrency: config.jobs.concurrency, pollIntervalMs: config.jobs.pollIntervalMs, metrics });
    jobs.register(ANALYSIS_JOB, new AnalysisJobHandler({ db: database.db, bus: deps.bus, outbox, llms: analysisLlms, log: log.child({ module: 'analysis' }) }).handle);
    jobs.register(KB_INDEX_JOB, new KbIndexingJob({ pool: database.pool, kb: knowledgeBase, log: log.child({ module: 'knowledge-base' }) }).handle);
    await jobs.start();
    await dispatcher?.start();
    return {
      app,
      database,
      url,
      databaseMode: embedded ? 'embedded' : 'external',
      bootstrap: boot,
      admin: admin ? { url: admin.url, tokenSource: admin.tokenSource } : null,
      twilio,
      vonage,
      telnyx,
      recordings,
      close: async () => {
        await app.close();
        await mailer.close();
        await admin?.close();
        await calls.close();
        await knowledgeRetrieval.close();
        await jobs.stop();
        await knowledgeBase.close();
        await analysisLlms.close();
        await telephony.close();
        await telegram.close();
        await dispatcher?.stop();
        await housekeeping.stop();
        await authPurge.stop();
        if (recordings instanceof S3ObjectStore) await recordings.close();
        await database.close();
        await embedded?.stop();
      },
    };
  } catch (err) {
    await database.close().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}
