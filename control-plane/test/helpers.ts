import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { pino } from 'pino';
import { expect, inject } from 'vitest';
import { InProcessBus, SCOPES, newId } from '@vap/shared';
import type { Bus, Scope } from '@vap/shared';
import { buildApp } from '../src/app.js';
import type { AppDeps } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { ControlPlaneConfig } from '../src/config.js';
import { openDatabase, runMigrations } from '../src/db/database.js';
import type { Database } from '../src/db/database.js';
import type { Plan } from '../src/db/schema/tenants.js';
import { ApiKeyRepository } from '../src/modules/api-keys/repository.js';
import { mintApiKey } from '../src/modules/api-keys/service.js';
import { TenantRepository } from '../src/modules/tenants/repository.js';
import { SecretBox } from '../src/secret-box.js';

/**
 * The secret key of every app in this test run. One per run, not per file: JWT signing keys
 * are stored sealed in the shared database and used by whichever file's app comes next,
 * as replicas sharing SECRET_ENCRYPTION_KEY do.
 */
export const TEST_SECRET_KEY = createHash('sha256').update(`vap-test-secret-key:${inject('databaseUrl')}`).digest();

export function testConfig(env: Record<string, string> = {}): ControlPlaneConfig {
  return loadConfig({ DATABASE_URL: inject('databaseUrl'), LOG_LEVEL: 'silent', SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY.toString('base64'), ...env });
}

export interface TestApp {
  app: FastifyInstance;
  database: Database;
  bus: Bus;
  config: ControlPlaneConfig;
  close(): Promise<void>;
}

/** The real app on the run's database; `now` moves the rate-limit clock; `deps` adds or replaces app dependencies (carriers on simulators…). */
export async function createTestApp(opts: { env?: Record<string, string>; bus?: Bus; now?: () => number; database?: Database; deps?: Partial<AppDeps> } = {}): Promise<TestApp> {
  const config = testConfig(opts.env);
  const database = opts.database ?? openDatabase(config.databaseUrl!, 5);
  const bus = opts.bus ?? new InProcessBus();
  const app = await buildApp(config, { database, bus, secrets: new SecretBox(TEST_SECRET_KEY), logger: pino({ level: 'silent' }), ...(opts.now ? { now: opts.now } : {}), ...opts.deps });
  await app.ready();
  return {
    app,
    database,
    bus,
    config,
    close: async () => {
      await app.close();
      if (!opts.database) await database.close();
    },
  };
}

export interface TestTenant {
  tenantId: string;
  /** A key with every scope and canManageApiKeys. */
  key: string;
  /** Mints another key for this tenant. */
  mintKey(opts?: { scopes?: Scope[]; canManageApiKeys?: boolean; expiresAt?: Date | null }): Promise<{ id: string; key: string }>;
}

/** A fresh tenant (its own data, so test files never collide) with an all-powerful key. */
export async function createTenant(database: Database, opts: { plan?: Plan; rateLimitPerMinute?: number } = {}): Promise<TestTenant> {
  const tenantId = newId('ten');
  await new TenantRepository(database.db).insert({
    id: tenantId,
    name: `Test ${tenantId}`,
    slug: tenantId,
    plan: opts.plan ?? 'enterprise',
    rateLimitPerMinute: opts.rateLimitPerMinute ?? (opts.plan === undefined || opts.plan === 'enterprise' ? 100_000 : null),
  });
  const repo = new ApiKeyRepository(database.db);
  const mintKey: TestTenant['mintKey'] = async (o = {}) => {
    const { row, key } = await mintApiKey(repo, {
      tenantId,
      name: 'test',
      scopes: o.scopes ?? [...SCOPES],
      environment: 'sandbox',
      canManageApiKeys: o.canManageApiKeys ?? true,
      expiresAt: o.expiresAt ?? null,
      createdBy: null,
    });
    return { id: row.id, key };
  };
  const { key } = await mintKey();
  return { tenantId, key, mintKey };
}

/** `app.inject` with a bearer key and a JSON body. */
export function call(app: FastifyInstance, key: string | null, method: InjectOptions['method'], url: string, body?: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
}

/** A minimal valid create body; `overrides` replace top-level fields. */
export function agentBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `Agent ${randomBytes(4).toString('hex')}`,
    persona: { name: 'Ava', personality: 'warm', role: 'support' },
    voice: { provider: 'elevenlabs', voiceId: 'voice-1' },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    transcription: { provider: 'deepgram', model: 'nova-2', language: 'en-US' },
    systemPromptTemplate: 'You are {{persona}}. Help the caller.',
    ...overrides,
  };
}

/** Creates an agent through the API (asserting 201) and returns it. */
export async function createAgentFor(app: FastifyInstance, key: string, overrides: Record<string, unknown> = {}) {
  const res = await call(app, key, 'POST', '/api/v1/agents', agentBody(overrides));
  expect(res.statusCode).toBe(201);
  return res.json();
}

/**
 * A database of its own on the run's Postgres server, migrated, for tests whose workers
 * are global over a database (the webhook dispatcher claims any tenant's deliveries):
 * sharing the run's database would let another file's dispatcher take this file's work.
 */
export async function isolatedDatabase(poolSize = 5): Promise<{ database: Database; url: string; drop(): Promise<void> }> {
  const base = new URL(inject('databaseUrl'));
  const name = `vap_iso_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base.toString() });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const database = openDatabase(u.toString(), poolSize);
  await runMigrations(database);
  return {
    database,
    url: u.toString(),
    drop: async () => {
      await database.close();
      const c = new pg.Client({ connectionString: base.toString() });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}
