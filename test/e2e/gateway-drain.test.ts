import { afterEach, describe, expect, it } from 'vitest';
import { twilioSid } from '@vap/media-gateway/simulators';
import { SAME_SIGNAL_WITHIN_MS } from '@vap/shared';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { isolatedDatabase } from '../../control-plane/test/helpers.js';
import { platformWithGatewayProcess } from './gateway-process.js';
import type { GatewayProcess } from './gateway-process.js';
import { callInProgress, collectUnhandledRejections } from './platform.js';
import type { Json, Platform } from './platform.js';

// A media gateway process (media-gateway/src/server.ts, as deployed, on NATS) stopped with
// SIGTERM mid-call, as a rolling restart does: it drains. New calls are refused while the
// call in progress goes on to its own end and is stored whole; a second signal ends it now.
// A database of its own: a draining gateway's heartbeats make a control plane answer new
// calls with its apology while no other gateway takes calls (drain-inbound.test.ts), and
// other files' calls are routed on the shared one.

const natsUrl = process.env.TEST_NATS_URL;
const HEARTBEAT_MS = 500;
const LINE = 'Hi, I would like to book a table for two tonight.';

let p: Platform | undefined;
let gateway: GatewayProcess | undefined;
let iso: Awaited<ReturnType<typeof isolatedDatabase>> | undefined;

/** The platform and a gateway process that drains for up to a minute. */
async function start(): Promise<{ p: Platform; gateway: GatewayProcess }> {
  iso = await isolatedDatabase(2);
  ({ p, gateway } = await platformWithGatewayProcess(
    { CALL_WATCHDOG_INTERVAL_MS: '500', DATABASE_URL: iso.url },
    { GATEWAY_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS), GATEWAY_DRAIN_TIMEOUT_MS: '60000', LOG_LEVEL: 'info' },
  ));
  return { p, gateway };
}

/** The gateway process's log lines (pino JSON) with this message. */
function logged(g: GatewayProcess, msg: string): Json[] {
  return g
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Json)
    .filter((l) => l.msg === msg);
}

describe.skipIf(!natsUrl)('a media gateway process stopped with SIGTERM mid-call', () => {
  const rejections = collectUnhandledRejections();
  afterEach(async () => {
    gateway?.kill();
    gateway = undefined;
    await p?.close();
    p = undefined;
    await iso?.drop();
    iso = undefined;
    expect(rejections.reasons).toEqual([]);
  });

  it('refuses new calls, lets the call in progress go on to its end (stored completed, whole), then exits 0', async () => {
    const { p, gateway } = await start();
    // The gateway process runs its own simulators: its STT is told what this caller says.
    const providers: Json = await (await fetch(`${gateway.url}/sandbox/providers`)).json();
    const callSid = twilioSid('CA');
    const scripted = await fetch(`${providers.deepgram.baseUrl}/__sim/script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ callKey: callSid, utterances: [LINE] }) });
    expect(scripted.ok).toBe(true);
    const { call, conversationId } = await callInProgress(p, callSid);

    gateway.child.kill('SIGTERM');
    await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 5000 }).toBe(503);
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toMatchObject({ reason: 'draining', detail: 'The gateway is shutting down: it finishes the 1 call it carries and takes no new one' });
    expect(logged(gateway, 'draining: new calls are refused; the calls in progress go on until they end (a second SIGINT or SIGTERM ends them now)')).toMatchObject([{ calls: 1, drainTimeoutMs: 60_000 }]);

    // Longer than the watchdog's three heartbeats: the gateway still beats, the control plane keeps the call.
    await new Promise((r) => setTimeout(r, 4 * HEARTBEAT_MS));
    expect((await p.api('GET', `/api/v1/conversations/${conversationId}`)).body.status).toBe('in_progress');
    // The caller talks and is answered, and what is said is stored, as on any call.
    const said = await call.say(await callerSpeechMulaw(LINE));
    await expect.poll(() => call.firstAgentAudioAfter(said.endedAt), { timeout: 15_000, interval: 50 }).not.toBeNull();
    await expect.poll(async () => ((await p.api('GET', `/api/v1/conversations/${conversationId}/messages`)).body.messages as Json[]).map((m) => m.content), { timeout: 10_000 }).toContain(LINE);
    expect(gateway.child.exitCode).toBeNull();

    await call.hangup();
    expect(await gateway.exited).toBe(0);
    const conv: Json = await p.finishedConversation(conversationId, 10_000);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'user_ended' });
    expect(conv.cost).not.toBeNull();
    expect(await p.storedError(conversationId)).toBeNull();
    expect(logged(gateway, 'drained: no call in progress')).toHaveLength(1);
    await expect.poll(() => p.events.filter((e) => e.data['conversationId'] === conversationId).map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']);
  }, 90_000);

  it('ends the call in progress at once on a second signal, stored failed as gateway_shutdown, and exits 0', async () => {
    const { p, gateway } = await start();
    const { call, conversationId } = await callInProgress(p);
    gateway.child.kill('SIGTERM');
    await expect.poll(async () => (await fetch(`${gateway.url}/readyz`)).status, { timeout: 5000 }).toBe(503);
    // A signal sooner than this is taken for the first one relayed again.
    await new Promise((r) => setTimeout(r, SAME_SIGNAL_WITHIN_MS));
    const hurriedAt = Date.now();
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    // Far from the minute the drain could have lasted.
    expect(Date.now() - hurriedAt).toBeLessThan(15_000);
    expect(await Promise.race([call.closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 2000))])).not.toBe('open');
    const conv: Json = await p.finishedConversation(conversationId, 10_000);
    expect(conv).toMatchObject({ status: 'failed', endReason: 'gateway_shutdown' });
    expect(logged(gateway, 'drain over: the calls still in progress are ended')).toMatchObject([{ calls: 1, reason: 'hurried' }]);
  }, 90_000);
});
