import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedDatabase } from '../../control-plane/test/helpers.js';
import { APOLOGY_TEXT } from '../../control-plane/src/modules/telephony/inbound-answer.js';
import { callInProgress, collectUnhandledRejections, placeTwilioCall, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

// The one-process platform (`pnpm start`) stopped mid-call: its gateway drains (what Ctrl-C or
// SIGTERM starts) and says so in its heartbeat, so the control plane answers a call arriving
// meanwhile with its apology instead of a stream the gateway would refuse (the caller would
// hear nothing). The call in progress goes on. A database of its own: every gateway heard from
// counts, and other files' gateways beat on the shared one.

let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let p: Platform;

beforeAll(async () => {
  iso = await isolatedDatabase(2);
  p = await startPlatform('in-process', { DATABASE_URL: iso.url, GATEWAY_HEARTBEAT_INTERVAL_MS: '500' });
}, 60_000);
afterAll(async () => {
  await p?.close();
  await iso?.drop();
});

describe('a call arriving while the platform drains', () => {
  const rejections = collectUnhandledRejections();

  it('is answered with the apology while the call in progress goes on to its end', async () => {
    const { call, conversationId } = await callInProgress(p);
    const drained = p.gateway.drain({ timeoutMs: 60_000 });
    // The drain's heartbeat is sent at once; a call that comes before it is stored is routed as before.
    await expect
      .poll(async () => (await p.cp.database.pool.query('select draining from gateway_heartbeats where gateway_id = $1', [p.gateway.gatewayId])).rows[0]?.draining, { timeout: 5000, interval: 20 })
      .toBe(true);

    const placed = await placeTwilioCall(p);
    expect(placed).toMatchObject({ rejected: true, say: APOLOGY_TEXT });
    const { rows } = await p.cp.database.pool.query('select count(*)::int as n from conversations');
    expect(rows[0].n).toBe(1);

    expect((await p.api('GET', `/api/v1/conversations/${conversationId}`)).body.status).toBe('in_progress');
    await call.hangup();
    expect(await drained).toBe(0);
    // Hung up after the greeting without a word: abandoned, as any such call (not cut by the drain).
    expect(await p.finishedConversation(conversationId, 10_000)).toMatchObject({ status: 'abandoned', endReason: 'user_ended' });
    expect(rejections.reasons).toEqual([]);
  }, 90_000);
});
