import type { FastifyInstance } from 'fastify';
import { asc } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import type { Database } from '../../src/db/database.js';
import { phoneNumbers } from '../../src/db/schema/phone-numbers.js';
import type { NumberStatus } from '../../src/db/schema/phone-numbers.js';
import { ControlPlaneMetrics } from '../../src/modules/metrics/control-plane-metrics.js';
import { createTelephonyProviders } from '../../src/modules/telephony/providers/index.js';
import { startCarrierSimulators } from '../../src/modules/telephony/providers/simulators.js';
import type { CarrierSimulators } from '../../src/modules/telephony/providers/simulators.js';
import { createTenant, isolatedDatabase } from '../helpers.js';
import { adminCall, createAdminApp } from '../admin-fixtures.js';

const PATH = '/api/v1/telephony/debug/repair-provider-sids';
// The repair reads every tenant's numbers: a database of its own keeps other files' rows out.
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let sims: CarrierSimulators;
let admin: FastifyInstance;
const ids = { wrong: newId('num'), right: newId('num'), gone: newId('num'), unset: newId('num'), twilio: newId('num'), released: newId('num') };
let canonical: { wrong: string; right: string; unset: string };
let wrongStored: string;

async function insert(database: Database, tenantId: string, row: { id: string; phoneNumber: string; providerSid: string | null; provider?: 'telnyx' | 'twilio'; status?: NumberStatus; minute: number }) {
  await database.db.insert(phoneNumbers).values({
    id: row.id,
    tenantId,
    phoneNumber: row.phoneNumber,
    country: 'US',
    provider: row.provider ?? 'telnyx',
    providerSid: row.providerSid,
    status: row.status ?? 'active',
    provisionedAt: new Date(Date.UTC(2025, 0, 1, 0, row.minute)),
  });
}

async function storedSids(): Promise<Record<string, string | null>> {
  const rows = await iso.database.db.select({ id: phoneNumbers.id, sid: phoneNumbers.providerSid }).from(phoneNumbers).orderBy(asc(phoneNumbers.id));
  return Object.fromEntries(rows.map((r) => [r.id, r.sid]));
}

beforeAll(async () => {
  iso = await isolatedDatabase();
  sims = await startCarrierSimulators();
  const a = await createTenant(iso.database);
  const b = await createTenant(iso.database);
  const wrong = sims.telnyx.seedOwned('+14155550131');
  const right = sims.telnyx.seedOwned('+14155550132');
  const unset = sims.telnyx.seedOwned('+12125550131');
  canonical = { wrong: wrong.id, right: right.id, unset: unset.id };
  wrongStored = wrong.orderEntryId;
  // Stored with the order entry's id (the bug), correct, not on Telnyx any more, without an id (another tenant).
  await insert(iso.database, a.tenantId, { id: ids.wrong, phoneNumber: '+14155550131', providerSid: wrong.orderEntryId, minute: 1 });
  await insert(iso.database, a.tenantId, { id: ids.right, phoneNumber: '+14155550132', providerSid: right.id, minute: 2 });
  await insert(iso.database, a.tenantId, { id: ids.gone, phoneNumber: '+14155550133', providerSid: 'stale-id', minute: 3 });
  await insert(iso.database, b.tenantId, { id: ids.unset, phoneNumber: '+12125550131', providerSid: null, minute: 4 });
  // Not scanned: another carrier's number, and a released Telnyx one.
  await insert(iso.database, b.tenantId, { id: ids.twilio, phoneNumber: '+14155550104', providerSid: 'PN0', provider: 'twilio', minute: 5 });
  await insert(iso.database, b.tenantId, { id: ids.released, phoneNumber: '+14155550105', providerSid: 'old', status: 'released', minute: 6 });
  const telephony = createTelephonyProviders(sims.config, { errors: new ControlPlaneMetrics().telephonyApiErrors, retry: { baseDelayMs: 5 } });
  admin = await createAdminApp(iso.database, {}, { telephony });
});
afterAll(async () => {
  await admin?.close();
  await sims?.close();
  await iso?.drop();
});

describe('POST /api/v1/telephony/debug/repair-provider-sids', () => {
  it('reports what it would repair in a dry run and writes nothing', async () => {
    const before = await storedSids();
    const res = await adminCall(admin, 'POST', `${PATH}?dryRun=true`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      dryRun: true,
      scanned: 4,
      repaired: 2,
      alreadyCorrect: 1,
      missingOnProvider: 1,
      errors: 0,
      items: [
        { id: ids.wrong, phoneNumber: '+14155550131', storedProviderSid: wrongStored, canonicalProviderSid: canonical.wrong, action: 'repaired' },
        { id: ids.right, phoneNumber: '+14155550132', storedProviderSid: canonical.right, canonicalProviderSid: canonical.right, action: 'already-correct' },
        { id: ids.gone, phoneNumber: '+14155550133', storedProviderSid: 'stale-id', canonicalProviderSid: null, action: 'missing-on-telnyx' },
        { id: ids.unset, phoneNumber: '+12125550131', storedProviderSid: null, canonicalProviderSid: canonical.unset, action: 'repaired' },
      ],
    });
    expect(await storedSids()).toEqual(before);
    // One lookup per number, by E.164, with the API key.
    expect(sims.telnyx.requestsTo('GET', /^\/v2\/phone_numbers$/).map((r) => r.query['filter[phone_number]'])).toEqual(['+14155550131', '+14155550132', '+14155550133', '+12125550131']);
  });

  it('treats a missing dryRun as a dry run', async () => {
    const before = await storedSids();
    const res = await adminCall(admin, 'POST', PATH);
    expect(res.json()).toMatchObject({ dryRun: true, repaired: 2 });
    expect(await storedSids()).toEqual(before);
  });

  it('rewrites the provider ids that differ, across tenants, and only those', async () => {
    const before = await storedSids();
    const res = await adminCall(admin, 'POST', `${PATH}?dryRun=false`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ dryRun: false, scanned: 4, repaired: 2, alreadyCorrect: 1, missingOnProvider: 1, errors: 0 });
    expect(await storedSids()).toEqual({ ...before, [ids.wrong]: canonical.wrong, [ids.unset]: canonical.unset });
    const again = await adminCall(admin, 'POST', `${PATH}?dryRun=false`);
    expect(again.json()).toMatchObject({ repaired: 0, alreadyCorrect: 3, missingOnProvider: 1 });
  });

  it('reports a lookup that keeps failing as an error item and carries on', async () => {
    // Three attempts (the wrapper's retries) for the first number, then Telnyx answers again.
    sims.telnyx.failNext(3, 500);
    const res = await adminCall(admin, 'POST', `${PATH}?dryRun=false`);
    const body = res.json();
    expect(body).toMatchObject({ scanned: 4, errors: 1, alreadyCorrect: 2, missingOnProvider: 1, repaired: 0 });
    expect(body.items[0]).toMatchObject({ id: ids.wrong, canonicalProviderSid: null, action: expect.stringMatching(/^error: telnyx findOwnedNumber: HTTP 500/) });
  });

  it('answers 422 naming dryRun when it is not true or false', async () => {
    for (const value of ['yes', '1', '']) {
      const res = await adminCall(admin, 'POST', `${PATH}?dryRun=${value}`);
      expect(res.statusCode, value).toBe(422);
      expect(res.json().errors.map((e: { field: string }) => e.field)).toEqual(['dryRun']);
    }
  });

  it('answers 503 naming the variable when Telnyx is not configured', async () => {
    const telephony = createTelephonyProviders({ ...sims.config, telnyx: { ...sims.config.telnyx, apiKey: undefined } }, { errors: new ControlPlaneMetrics().telephonyApiErrors });
    const bare = await createAdminApp(iso.database, {}, { telephony });
    try {
      const res = await adminCall(bare, 'POST', `${PATH}?dryRun=true`);
      expect(res.statusCode).toBe(503);
      expect(res.json().detail).toBe('Telnyx is not configured: set TELNYX_API_KEY.');
    } finally {
      await bare.close();
    }
  });

  it('answers 401 without a token and 403 with another one, touching nothing', async () => {
    const before = await storedSids();
    const lookups = sims.telnyx.requests.length;
    expect((await adminCall(admin, 'POST', `${PATH}?dryRun=false`, undefined, null)).statusCode).toBe(401);
    expect((await adminCall(admin, 'POST', `${PATH}?dryRun=false`, undefined, 'not-the-admin-token-000000')).statusCode).toBe(403);
    expect(sims.telnyx.requests.length).toBe(lookups);
    expect(await storedSids()).toEqual(before);
  });
});
