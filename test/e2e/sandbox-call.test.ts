import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@vap/control-plane';
import { loadGatewayConfig } from '@vap/media-gateway';
import { main } from '../../bin/sandbox-call.js';
import { BOOKING_CONVERSATION } from '../../bin/sandbox-call/conversation-script.js';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

const ADMIN_TOKEN = 'e2e_admin_token_0123456789abcdef';
// The opening-hours question, the line that cuts its long answer off, and the goodbye: every
// path of the command (barge-in, cut answer, hang-up) in a third of the full booking's time.
const SHORT = BOOKING_CONVERSATION.slice(1, 3).concat(BOOKING_CONVERSATION.slice(-1));

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('the sandbox call command (pnpm call) against a running platform', () => {
  let p: Platform;
  let number: string;
  let env: Record<string, string>;
  // The platform generates its Telnyx key and Vonage secret here; the command signs with them.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vap-sandbox-call-'));
  /** A number of each other carrier, assigned to an agent. */
  const carrierNumbers: Record<'telnyx' | 'vonage', string> = { telnyx: '', vonage: '' };

  const run = async (args: string[], overrides: Record<string, string> = {}, turns = SHORT) => {
    const out: string[] = [];
    const err: string[] = [];
    const e = { ...env, ...overrides };
    // The configuration the CLI would load from this environment.
    const code = await main(args, { config: loadConfig(e), gatewayConfig: loadGatewayConfig(e), out: (l) => out.push(l), err: (l) => err.push(l), turns });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  beforeAll(async () => {
    p = await startPlatform('in-process', { ADMIN_TOKEN, DATA_DIR: dataDir });
    ({ number } = await p.agentWithNumber());
    for (const carrier of ['telnyx', 'vonage'] as const) {
      // The platform helper provisions Twilio numbers: these belong to the other carriers.
      carrierNumbers[carrier] = (await p.agentWithNumber()).number;
      await p.cp.database.pool.query(`update phone_numbers set provider = $1 where phone_number = $2`, [carrier, carrierNumbers[carrier]]);
    }
    env = {
      DATA_DIR: dataDir,
      PUBLIC_URL: p.cpUrl,
      TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
      ADMIN_TOKEN,
      ADMIN_PORT: new URL(p.cp.admin!.url).port,
      GATEWAY_PORT: new URL(p.gateway.url).port,
    };
  }, 60_000);
  afterAll(async () => {
    await p?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // The two calls run at the same time (real-time audio is the slow part); their caller lines differ, so neither reads the other's LLM history.
  it.concurrent('calls the number, shows the cut answer as heard, the per-turn breakdown, the barge-in and the finished conversation', async () => {
    const r = await run(['--to', number]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('deepgram: simulated');
    expect(r.out).toMatch(/Caller speech {2}(espeak-ng|recorded fixtures)/);
    // The agent's greeting and the part of the long answer the caller heard, from the agent's own memory.
    expect(r.out).toContain('Agent   Hello! Thanks for calling Harbour Bistro. How can I help?');
    const heard = /\[CUT by the caller after [\d.]+ s of audio; heard: "([^"]+)"\]/.exec(r.out);
    expect(heard, r.out).not.toBeNull();
    expect(SHORT[0]!.reply.startsWith(heard![1]!)).toBe(true);
    expect(heard![1]!.length).toBeLessThan(SHORT[0]!.reply.length);
    expect(r.out).toContain(`Agent   ${SHORT[2]!.reply}`);

    // One latency row per caller line, each with the caller's figure and the gateway's total.
    const rows = r.out.split('\n').filter((l) => /^ {2}\d {2}/.test(l));
    expect(rows).toHaveLength(SHORT.length);
    for (const row of rows) expect(row).toMatch(/ \d+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d+$/);
    expect(r.out).toMatch(/cleared: \d+ ms at the caller; \d+ ms in the gateway/);

    const conversationId = /Conversation {3}(conv_\w+)/.exec(r.out)?.[1];
    expect(conversationId).toBeDefined();
    expect(r.out).toContain('Gateway      status completed, end reason agent_ended');
    expect(r.out).toContain('Stored       status Completed');
    // What the command showed as heard is what the platform stored for the interrupted answer.
    const { body } = await p.api('GET', `/api/v1/conversations/${conversationId}/messages`);
    const cut = body.messages.find((m: { interrupted: boolean }) => m.interrupted);
    expect(cut.content).toBe(heard![1]);
  }, 90_000);

  it.concurrent('prints the stored transcript when given a tenant API key', async () => {
    const r = await run(['--to', number, '--api-key', p.tenant.key], {}, BOOKING_CONVERSATION.slice(-1));
    expect(r.code).toBe(0);
    expect(r.out).toContain('Transcript (stored by the platform, read with the API key)');
    expect(r.out).toContain(`Caller  ${BOOKING_CONVERSATION.at(-1)!.say}`);
    expect(r.out).toContain('Stored       status completed, end reason agent_ended');
  }, 60_000);

  // One short call per other carrier, after the Twilio ones (four real-time calls at once would crowd the machine).
  for (const [carrier, name, secret] of [
    ['telnyx', 'Telnyx', 'the sandbox key'],
    ['vonage', 'Vonage', 'the sandbox secret'],
  ] as const) {
    it(`--carrier ${carrier} calls a ${name} number with the ${name} simulator: the same turn table, barge-in and conversation`, async () => {
      const r = await run(['--carrier', carrier, '--to', carrierNumbers[carrier], '--api-key', p.tenant.key]);
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      expect(r.out).toContain(`Sandbox call to ${carrierNumbers[carrier]} from +14155550100 over ${name}`);
      expect(r.out).toContain(`voice webhook signed with ${secret} in ${dataDir}`);
      const rows = r.out.split('\n').filter((l) => /^ {2}\d {2}/.test(l));
      expect(rows).toHaveLength(SHORT.length);
      for (const row of rows) expect(row).toMatch(/ \d+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d+$/);
      // Vonage has no clear: the caller's figure is when the agent's audio stopped playing.
      expect(r.out).toMatch(/cleared: \d+ ms at the caller; \d+ ms in the gateway/);
      expect(r.out).toContain(`Caller  ${SHORT[1]!.say}`);
      expect(r.out).toMatch(/\[CUT by the caller after [\d.]+ s of audio/);
      expect(r.out).toContain('Gateway      status completed, end reason agent_ended');
      const conversationId = /Conversation {3}(conv_\w+)/.exec(r.out)?.[1];
      const { body: costs } = await p.api('GET', `/api/v1/conversations/${conversationId}/costs`);
      expect(costs.breakdown.telephony.provider).toBe(carrier);
    }, 60_000);
  }

  it('refuses an unknown --carrier with exit code 2, and --carrier telnyx without --to with how to get a Telnyx number', async () => {
    const bad = await run(['--carrier', 'plivo']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('Error: --carrier must be one of twilio, telnyx, vonage (got "plivo")');
    // With or without the `--` npm users put before a script's options.
    for (const args of [['--carrier', 'telnyx'], ['--', '--carrier', 'telnyx']]) {
      const noTo = await run(args);
      expect(noTo.code, args.join(' ')).toBe(1);
      expect(noTo.err).toContain('--carrier telnyx needs --to: the sandbox number +15005550006 is a Twilio number');
      expect(noTo.err).toContain('POST /api/v1/telephony/numbers');
    }
  });

  it('says the platform is not running when nothing answers at PUBLIC_URL', async () => {
    const r = await run([], { PUBLIC_URL: `http://127.0.0.1:${await closedPort()}` });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^Error: The platform is not running: nothing answers at http:\/\/127\.0\.0\.1:\d+ \(PUBLIC_URL; ECONNREFUSED\)/);
    expect(r.err).not.toContain('    at ');
  });

  it('explains the apology when no agent answers the number', async () => {
    const r = await run(['--to', '+15550001111']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('answered +15550001111 with an apology and hung up');
  });

  it('explains a signature refused because the token differs from the platform\'s', async () => {
    const r = await run(['--to', number], { TWILIO_AUTH_TOKEN: 'not_the_platform_token_000000000' });
    expect(r.code).toBe(1);
    expect(r.err).toContain('refused the call\'s signature (HTTP 403)');
  });
});
