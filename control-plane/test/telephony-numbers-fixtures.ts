import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect } from 'vitest';
import { newId } from '@vap/shared';
import type { Database } from '../src/db/database.js';
import { conversations } from '../src/db/schema/conversations.js';
import { createTelephonyProviders } from '../src/modules/telephony/providers/index.js';
import type { TelephonyProviders } from '../src/modules/telephony/providers/index.js';
import { startCarrierSimulators } from '../src/modules/telephony/providers/simulators.js';
import type { CarrierSimulators } from '../src/modules/telephony/providers/simulators.js';
import { call, createAgentFor, createTenant, createTestApp, isolatedDatabase } from './helpers.js';
import type { TestApp, TestTenant } from './helpers.js';
import { TELEPHONY_ENV } from './telephony-fixtures.js';

/** The app of a numbers test, its carriers on simulators, and two tenants. */
export interface NumbersWorld {
  t: TestApp;
  /** The three carrier simulators (real HTTP on loopback) the app's adapters talk to. */
  sims: CarrierSimulators;
  telephony: TelephonyProviders;
  tenant: TestTenant;
  /** A second tenant, for isolation checks. */
  other: TestTenant;
  /** Carrier failures counted by the retry wrapper, as `provider:method`. */
  carrierErrors: string[];
}

/**
 * One file's numbers world: a database of its own (the simulators' stock is the same in every
 * file and E.164 is unique across the platform, so files must not share one), carrier
 * simulators, the app built with adapters pointed at them (retries without backoff), and
 * `PUBLIC_URL` = {@link TELEPHONY_ENV}'s. Set up in beforeAll, torn down in afterAll.
 */
export function numbersWorld(): NumbersWorld {
  const w = { carrierErrors: [] } as unknown as NumbersWorld;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const iso = await isolatedDatabase();
    drop = iso.drop;
    w.sims = await startCarrierSimulators({ timeoutMs: 2_000 });
    w.telephony = createTelephonyProviders(w.sims.config, { errors: { inc: (l) => w.carrierErrors.push(`${l.provider}:${l.method}`) }, retry: { baseDelayMs: 1 } });
    w.t = await createTestApp({ database: iso.database, env: { ...TELEPHONY_ENV }, deps: { telephony: w.telephony } });
    w.tenant = await createTenant(w.t.database);
    w.other = await createTenant(w.t.database);
  });
  afterAll(async () => {
    await w.t?.close();
    await w.sims?.close();
    await drop?.();
  });
  return w;
}

/** `POST /api/v1/telephony/numbers` as `key`. */
export function provision(w: NumbersWorld, body: Record<string, unknown>, key = w.tenant.key, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return call(w.t.app, key, 'POST', '/api/v1/telephony/numbers', body, headers);
}

/** Provisions `phoneNumber` (asserting 201) and returns the number. */
export async function provisioned(w: NumbersWorld, phoneNumber: string, provider: 'twilio' | 'telnyx' | 'vonage' = 'twilio', key = w.tenant.key): Promise<{ id: string; phoneNumber: string; assignedAgentId: string | null; provisionedAt: string }> {
  const res = await provision(w, { phoneNumber, provider }, key);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

/** An agent of the tenant owning `key`, created through the API. */
export async function agentOf(w: NumbersWorld, key = w.tenant.key): Promise<{ id: string; name: string }> {
  return (await createAgentFor(w.t.app, key)) as { id: string; name: string };
}

/** Stores a finished (or, with `durationSeconds: null`, in-progress) call as the call handling does. */
export async function storeCall(
  database: Database,
  v: { tenantId: string; direction: 'inbound' | 'outbound'; callerPhone: string; calledPhone: string; startedAt: Date; durationSeconds: number | null; costUsd?: number; provider?: string },
): Promise<string> {
  const id = newId('conv');
  const ended = v.durationSeconds !== null;
  await database.db.insert(conversations).values({
    id,
    tenantId: v.tenantId,
    agentId: 'agt_00000000000000000000000001',
    agentName: 'Numbers agent',
    agentVersion: 1,
    channel: 'phone',
    status: ended ? 'completed' : 'in_progress',
    direction: v.direction,
    provider: v.provider ?? 'twilio',
    externalId: `CA${id.slice(5)}`,
    callerPhone: v.callerPhone,
    calledPhone: v.calledPhone,
    startedAt: v.startedAt,
    ...(ended ? { endedAt: new Date(v.startedAt.getTime() + v.durationSeconds! * 1000), durationSeconds: v.durationSeconds!, costTotalUsd: v.costUsd ?? 0 } : {}),
  });
  return id;
}
