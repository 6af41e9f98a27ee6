import { randomBytes } from 'node:crypto';
import { hash } from '@node-rs/argon2';
import { SCOPES, newId } from '@vap/shared';
import type { Logger } from 'pino';
import type { ControlPlaneConfig } from '../../config.js';
import type { Database } from '../../db/database.js';
import { tenants } from '../../db/schema/tenants.js';
import { users } from '../../db/schema/users.js';
import { ApiKeyRepository } from '../api-keys/repository.js';
import { mintApiKey } from '../api-keys/service.js';
import { parseKey } from '../api-keys/key-material.js';
import { createSandboxReceptionist } from '../telephony/sandbox-receptionist.js';
import type { SandboxReceptionist } from '../telephony/sandbox-receptionist.js';

const BOOTSTRAP_LOCK_ID = 7_361_002;

export interface BootstrapResult {
  tenantId: string;
  adminEmail: string;
  /** Present only when generated here; shown once. */
  generatedPassword?: string;
  /** The first API key in clear: present only on the start that created it. */
  apiKey?: string;
  /** Development only: the active sandbox agent and the sandbox number routed to it. */
  sandbox?: SandboxReceptionist;
}

/**
 * On an empty database: the first tenant, an Admin user and a first API key holding
 * every scope and the right to manage keys; in development also the sandbox receptionist
 * (an active agent) and the sandbox number +15005550006 assigned to it. Values come from
 * BOOTSTRAP_* variables; what is not given is generated and returned so the caller can
 * print it once.
 * Replicas starting together are serialised by an advisory lock; only one creates.
 */
export async function bootstrap(database: Database, config: ControlPlaneConfig, log: Logger): Promise<BootstrapResult | null> {
  const client = await database.pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [BOOTSTRAP_LOCK_ID]);
    const existing = await client.query('select 1 from tenants limit 1');
    if ((existing.rowCount ?? 0) > 0) return null;

    const b = config.bootstrap;
    const tenantId = newId('ten');
    const adminEmail = b.adminEmail ?? 'admin@localhost';
    const generatedPassword = b.adminPassword ? undefined : randomPassword();
    const passwordHash = await hash(b.adminPassword ?? generatedPassword!, { algorithm: 2 /* argon2id */ });
    const keyEnv = b.apiKey ? parseKey(b.apiKey)!.environment : config.appEnv === 'production' ? 'live' : 'sandbox';

    const adminId = newId('usr');
    await database.db.transaction(async (tx) => {
      await tx.insert(tenants).values({ id: tenantId, name: b.tenantName, slug: slugify(b.tenantName), plan: b.tenantPlan });
      await tx.insert(users).values({ id: adminId, tenantId, email: adminEmail, firstName: 'Admin', lastName: '', role: 'Admin', passwordHash, canManageApiKeys: true, canViewBilling: true, canDeleteConversations: true });
    });
    const { key } = await mintApiKey(new ApiKeyRepository(database.db), {
      tenantId,
      name: 'bootstrap',
      scopes: [...SCOPES],
      environment: keyEnv,
      canManageApiKeys: true,
      expiresAt: null,
      createdBy: null,
      ...(b.apiKey ? { key: b.apiKey } : {}),
    });
    const sandbox = config.appEnv === 'development' ? await createSandboxReceptionist(database.db, tenantId, adminId) : undefined;
    log.info({ tenantId, sandboxAgentId: sandbox?.agentId }, 'bootstrapped first tenant, admin user and API key');
    return { tenantId, adminEmail, ...(generatedPassword ? { generatedPassword } : {}), ...(b.apiKey ? {} : { apiKey: key }), ...(sandbox ? { sandbox } : {}) };
  } finally {
    await client.query('select pg_advisory_unlock($1)', [BOOTSTRAP_LOCK_ID]).catch(() => undefined);
    client.release();
  }
}

function slugify(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 60) || 'default'
  );
}

function randomPassword(): string {
  return randomBytes(18).toString('base64url');
}
