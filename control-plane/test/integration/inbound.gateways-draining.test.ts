import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { GatewayIntake } from '../../src/modules/telephony/gateway-intake.js';
import { InboundCallRouter } from '../../src/modules/telephony/inbound-call-router.js';
import { PhoneNumberRepository } from '../../src/modules/telephony/phone-number-repository.js';
import { createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp } from '../helpers.js';
import { TELEPHONY_ENV, agentWithNumber, postTwilio, voiceParams } from '../telephony-fixtures.js';
import { child, parseXml } from '../xml.js';
import { publishHeartbeat, startCalls } from './calls.fixtures.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';

// Inbound calls while the media gateways drain (shut down): the voice webhook answers the
// apology instead of a stream every gateway would refuse. What the gateways say comes from
// their heartbeats, as the bus brings them to this control plane's call handling and it
// stores them. A database of its own: every gateway heard from counts, and other files'
// gateways beat on the shared one.

const INTERVAL_MS = 200; // stale after 3 intervals, as the watchdog judges it
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let t: TestApp;
let calls: CallHandling;
type Routed = { agentId: string; phoneNumber: string; numberId: string };
let routed: Routed;
let otherCarriers: { telnyx: Routed; vonage: Routed };
const beating: NodeJS.Timeout[] = [];

beforeAll(async () => {
  iso = await isolatedDatabase();
  t = await createTestApp({ env: { ...TELEPHONY_ENV }, database: iso.database });
  calls = startCalls(iso.database.db, t.bus);
  const tenant = await createTenant(iso.database);
  routed = await agentWithNumber(t.app, iso.database, tenant);
  otherCarriers = { telnyx: await agentWithNumber(t.app, iso.database, tenant, { provider: 'telnyx' }), vonage: await agentWithNumber(t.app, iso.database, tenant, { provider: 'vonage' }) };
}, 30_000);
afterAll(async () => {
  for (const b of beating) clearInterval(b);
  await calls?.close();
  await t?.close();
  await iso?.drop();
});

/** What the Twilio voice webhook answers a call to the routed number: a stream or the apology. */
async function answer(): Promise<'stream' | 'apology'> {
  const res = await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(routed.phoneNumber));
  expect(res.statusCode).toBe(200);
  const response = parseXml(res.body);
  const names = response.children.map((c) => c.name).join(',');
  if (names === 'Connect') return 'stream';
  expect(names).toBe('Say,Hangup');
  expect(child(response, 'Say').text).toBe(APOLOGY_TEXT);
  return 'apology';
}

/** A gateway beating every half interval until `stop`; `draining` undefined leaves the field out (earlier gateways). */
function gateway(id: string, draining?: boolean): { stop(): void } {
  const beat = () => void publishHeartbeat(t.bus, id, [], INTERVAL_MS, draining);
  beat();
  const timer = setInterval(beat, INTERVAL_MS / 2);
  beating.push(timer);
  return { stop: () => clearInterval(timer) };
}

const poll = { timeout: 10_000, interval: 100 };

describe('POST /webhooks/twilio/voice while media gateways drain', () => {
  it('apologises while every gateway alive drains, and connects while one takes calls or none is heard from', async () => {
    // No gateway heard from: this control plane cannot tell (gateways starting, heartbeats not reaching it).
    expect(await answer()).toBe('stream');

    const draining = gateway('gw_draining_a', true);
    await expect.poll(answer, poll).toBe('apology');
    const router = new InboundCallRouter({ numbers: new PhoneNumberRepository(iso.database.db), mediaGatewayPublicUrl: 'wss://gw.example.com', gateways: new GatewayIntake(iso.database.db) });
    const request = { callSid: `CA${'2'.repeat(32)}`, from: '+14155550100', to: routed.phoneNumber };
    expect(await router.answer('twilio', request)).toMatchObject({ outcome: 'gateways-draining', numberId: routed.numberId, agentId: routed.agentId });
    // Every carrier's webhook gets its own apology.
    expect(await router.answer('telnyx', { ...request, to: otherCarriers.telnyx.phoneNumber })).toMatchObject({ outcome: 'gateways-draining', answer: { contentType: 'text/xml' } });
    expect(await router.answer('vonage', { ...request, to: otherCarriers.vonage.phoneNumber })).toMatchObject({ outcome: 'gateways-draining', answer: { contentType: 'application/json', body: JSON.stringify([{ action: 'talk', text: APOLOGY_TEXT }]) } });
    // A number that routes nowhere is still refused for that.
    expect((await router.answer('twilio', { ...request, to: '+15550000000' })).outcome).toBe('unknown-number');
    // A beat the gateway sent before its drain, stored after it, does not undo it.
    draining.stop();
    const stored = async () => (await iso.database.pool.query<{ seen: Date; draining: boolean }>('select last_seen_at as seen, draining from gateway_heartbeats where gateway_id = $1', ['gw_draining_a'])).rows[0]!;
    const before = (await stored()).seen.getTime();
    await publishHeartbeat(t.bus, 'gw_draining_a', [], INTERVAL_MS, false);
    await expect.poll(async () => (await stored()).seen.getTime(), poll).toBeGreaterThan(before);
    expect((await stored()).draining).toBe(true);
    const stillDraining = gateway('gw_draining_a', true);
    expect(await answer()).toBe('apology');

    // A gateway taking calls (of an earlier version: no `draining` in its heartbeat).
    const taking = gateway('gw_taking_b');
    await expect.poll(answer, poll).toBe('stream');

    // It goes quiet (gone): the draining one is the only one alive again.
    taking.stop();
    await expect.poll(answer, poll).toBe('apology');

    // The draining one goes quiet too (its drain over): none heard from, connected as before.
    stillDraining.stop();
    await expect.poll(answer, poll).toBe('stream');
  }, 60_000);
});
