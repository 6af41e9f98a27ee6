import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { buildAdminApp } from '../src/admin/admin-server.js';
import type { Database } from '../src/db/database.js';
import { ControlPlaneMetrics } from '../src/modules/metrics/control-plane-metrics.js';
import { createTelephonyProviders } from '../src/modules/telephony/providers/index.js';
import type { TelephonyProviders } from '../src/modules/telephony/providers/index.js';
import { SecretBox } from '../src/secret-box.js';
import { TEST_SECRET_KEY, testConfig } from './helpers.js';

export const ADMIN_TOKEN = 'admin-test-token-0123456789abcdef';

/**
 * The admin app on `database`, built as startControlPlane builds it (not listening);
 * `telephony`: carriers (e.g. on simulators), by default the config's, on metrics of their own.
 */
export async function createAdminApp(database: Database, env: Record<string, string> = {}, deps: { telephony?: TelephonyProviders } = {}): Promise<FastifyInstance> {
  const config = testConfig({ ADMIN_TOKEN, ...env });
  const telephony = deps.telephony ?? createTelephonyProviders(config.carrierApis, { errors: new ControlPlaneMetrics().telephonyApiErrors });
  const app = await buildAdminApp(config, { database, logger: pino({ level: 'silent' }), token: ADMIN_TOKEN, telephony, secrets: new SecretBox(TEST_SECRET_KEY) });
  await app.ready();
  return app;
}

/** `inject` with the admin token (or `token`, or none with null) and an optional JSON body. */
export function adminCall(app: FastifyInstance, method: 'GET' | 'POST', url: string, body?: unknown, token: string | null = ADMIN_TOKEN): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
}
