import { acceptJsonOnly } from '../http/json-body.js';
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { newId } from '@vap/shared';
import type { ControlPlaneConfig } from '../config.js';
import type { Database } from '../db/database.js';
import '../http/fastify-types.js';
import { clientErrorProblem, frameworkErrorProblem, refuseUnstorableText } from '../http/input-guards.js';
import { registerProblemHandlers } from '../http/problem.js';
import { validatorCompiler } from '../http/validation.js';
import { adminAuth } from './admin-auth.js';
import { loadAdminToken } from './admin-token.js';
import { CallInspector } from './call-inspector.js';
import { debugRoutes } from './debug-routes.js';
import type { TelephonyProviders } from '../modules/telephony/providers/index.js';
import { StreamTokens } from '../modules/telephony/stream-token.js';
import type { SecretBox } from '../secret-box.js';

/**
 * The admin API (`{admin_base_url}` in the spec): a separate listener on ADMIN_HOST:ADMIN_PORT
 * so it can stay off the public network, with the same problem+json errors as the main API.
 * Every request needs the admin bearer token.
 */
export async function buildAdminApp(config: ControlPlaneConfig, deps: { database: Database; logger: Logger; token: string; telephony: TelephonyProviders; secrets: SecretBox }): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: 64 * 1024,
    // Never trusts an inbound X-Request-Id: nothing in front of the admin API is assumed.
    genReqId: () => newId('trace'),
    logController: new LogController({ requestIdLogLabel: 'reqId', disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
    frameworkErrors: frameworkErrorProblem(),
    clientErrorHandler: clientErrorProblem,
  });
  app.decorate('docsUrl', config.docsUrl);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerProblemHandlers(app);
  refuseUnstorableText(app);

  // JSON only, as on the main API (an empty body counts as none).
  acceptJsonOnly(app);

  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Request-Id', req.id);
  });
  app.addHook('onRequest', adminAuth(deps.token));

  // Carriers: the control plane's (simulators in development without keys); default the configured ones, counted apart.
  // The simulator's Telnyx answer carries a stream token like the real one, keyed as the control plane's.
  const streamTokens = new StreamTokens(deps.secrets);
  await app.register(debugRoutes, { prefix: '/api/v1', appEnv: config.appEnv, inspector: new CallInspector(deps.database.db), telephony: deps.telephony, db: deps.database.db, streamTokens });
  return app;
}

/** A listening admin server. */
export interface AdminServer {
  app: FastifyInstance;
  /** Where it listens, e.g. http://127.0.0.1:3002. */
  url: string;
  /** `ADMIN_TOKEN` or the file the generated token is in (for the start banner; never the token). */
  tokenSource: string;
  close(): Promise<void>;
}

/**
 * Starts the admin server, or returns null when there is no admin token (production
 * without ADMIN_TOKEN): an admin API is better absent than open or on a generated secret
 * nobody can read.
 */
export async function startAdminServer(config: ControlPlaneConfig, deps: { database: Database; logger: Logger; telephony: TelephonyProviders; secrets: SecretBox }): Promise<AdminServer | null> {
  const log = deps.logger.child({ service: 'admin' });
  const admin = loadAdminToken(config.admin.token, config.dataDir, config.appEnv);
  if (!admin) {
    log.warn('ADMIN_TOKEN is not set: the admin API (telephony debug) is not started');
    return null;
  }
  const app = await buildAdminApp(config, { database: deps.database, logger: log, token: admin.token, telephony: deps.telephony, secrets: deps.secrets });
  const url = await app.listen({ host: config.admin.host, port: config.admin.port });
  log.info({ url, tokenSource: admin.source }, 'admin API listening');
  return { app, url, tokenSource: admin.source, close: () => app.close() };
}
