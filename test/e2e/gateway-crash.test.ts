import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, twilioSid } from '@vap/media-gateway/simulators';
import { TWILIO_TOKEN, collectUnhandledRejections, freePort, startPlatform } from './platform.js';
import type { Json, Platform } from './platform.js';

// A media gateway killed mid-call (kill -9): its process runs media-gateway/src/server.ts,
// exactly as deployed (own NATS connection, sandbox simulators in that process), while the
// control plane runs here on NATS. Only the control plane's watchdog can end the call.

const natsUrl = process.env.TEST_NATS_URL;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HEARTBEAT_MS = 500;

let p: Platform;
let child: ChildProcess | undefined;
let childUrl = '';
const childOutput: string[] = [];
const killChild = (): void => void child?.kill('SIGKILL');

/** Starts the gateway process and waits for its health endpoint. */
async function startGatewayProcess(port: number, natsSubjectPrefix: string): Promise<void> {
  childUrl = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, ['--import', 'tsx', 'media-gateway/src/server.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      NATS_URL: natsUrl,
      NATS_SUBJECT_PREFIX: natsSubjectPrefix,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      MEDIA_GATEWAY_PUBLIC_URL: `ws://127.0.0.1:${port}`,
      TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
      GATEWAY_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS),
      LOG_LEVEL: 'warn',
    },
  });
  childOutput.length = 0;
  child.stdout!.on('data', (d: Buffer) => childOutput.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => childOutput.push(d.toString()));
  // Whatever happens to this worker, the gateway process goes with it.
  process.removeListener('exit', killChild);
  process.once('exit', killChild);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway process exited with ${child.exitCode}:\n${childOutput.join('')}`);
    const ok = await fetch(`${childUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`gateway process not healthy within 30 s:\n${childOutput.join('')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(!natsUrl)('a media gateway process killed mid-call', () => {
  beforeAll(async () => {
    // The platform's own in-process gateway stays idle (a surviving gateway beside the dead
    // one); the control plane hands callers the stream URL of the child process.
    // Between freePort and the child's listen the port can be taken by a parallel test (CI once:
    // EADDRINUSE): then both start again on another port, up to 5 times.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      p = await startPlatform('nats', { CALL_WATCHDOG_INTERVAL_MS: '500', MEDIA_GATEWAY_PUBLIC_URL: `ws://127.0.0.1:${port}` });
      try {
        await startGatewayProcess(port, p.natsSubjectPrefix);
        break;
      } catch (err) {
        killChild();
        if (attempt >= 5 || !String(err).includes('EADDRINUSE')) throw err;
        await p.close();
      }
    }
  }, 120_000);
  const rejections = collectUnhandledRejections();
  afterEach(() => expect(rejections.reasons).toEqual([]));
  afterAll(async () => {
    killChild();
    process.removeListener('exit', killChild);
    await p?.close();
    rejections.stop();
    expect(rejections.reasons).toEqual([]);
  });

  it('fails the call with gateway_lost within seconds, emits Error and SessionEnded, and the caller is cut off', async () => {
    const { number } = await p.agentWithNumber();
    const callSid = twilioSid('CA');
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
    if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
    const call = placed.call;

    // In progress, with the first message spoken and stored.
    const rowOf = async () => (await p.cp.database.pool.query<{ id: string; gateway_id: string }>('select id, gateway_id from conversations where external_id = $1', [callSid])).rows;
    await expect.poll(rowOf, { timeout: 5000 }).toHaveLength(1);
    const rows = await rowOf();
    const conversationId = rows[0]!.id;
    expect(rows[0]!.gateway_id).not.toBe(p.gateway.gatewayId);
    await expect.poll(async () => (await p.api('GET', `/api/v1/conversations/${conversationId}/messages`)).body.messages.length, { timeout: 15_000 }).toBeGreaterThan(0);
    expect((await p.api('GET', `/api/v1/conversations/${conversationId}`)).body.status).toBe('in_progress');
    expect(call.heardAgentAudioMs).toBeGreaterThan(0);

    const killedAt = Date.now();
    child!.kill('SIGKILL');

    // The caller's media socket dies with the process.
    const code = await Promise.race([call.closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 2000))]);
    expect(code).not.toBe('open');

    const conv: Json = await p.finishedConversation(conversationId, 10_000);
    const afterMs = Date.now() - killedAt;
    expect(conv).toMatchObject({ status: 'failed', endReason: 'gateway_lost', cost: null });
    // Three missed heartbeats (1.5 s) plus at most one watchdog period (0.5 s), with slack for a loaded machine.
    expect(afterMs).toBeLessThan(6000);
    expect(await p.storedError(conversationId)).toMatchObject({ code: 'gateway_lost' });

    await expect.poll(() => p.events.filter((e) => e.data['conversationId'] === conversationId).map((e) => e.type)).toEqual(['SessionStarted', 'Error', 'SessionEnded']);
    const mine = p.events.filter((e) => e.data['conversationId'] === conversationId);
    expect(mine[1]!.data).toMatchObject({ errorCode: 'gateway_lost', recoverable: false });
    expect(mine[2]!.data).toMatchObject({ endReason: 'gateway_lost' });
    // What the gateway stored before it died is kept.
    const { body } = await p.api('GET', `/api/v1/conversations/${conversationId}/messages`);
    expect(body.messages[0]).toMatchObject({ role: 'agent', content: 'Hello! Thanks for calling Harbour Bistro. How can I help?' });
  });
});
