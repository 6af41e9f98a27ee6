import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_HEADERS, newId, signWebhook, spareLoopbackPort } from '@vap/shared';

// The example receiver of README "Receiving webhooks", run as a user runs it: its own
// process (node with tsx's loader, as the other e2e tests spawn), answering real requests.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = 'bin/webhook-receiver.ts';
const SECRET = 'whsec_e2e_receiver_0123456789abcdef';

let child: ChildProcess | undefined;
let url = '';
let output = '';
const killChild = (): void => void child?.kill('SIGKILL');

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (child?.exitCode !== null) throw new Error(`receiver exited with ${child?.exitCode} before ${what}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms:\n${output}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** POSTs a `SessionEnded` envelope signed with `secret` at `timestampSeconds`. */
async function deliver(opts: { id?: string; secret?: string; timestampSeconds?: number } = {}): Promise<{ id: string; status: number }> {
  const id = opts.id ?? newId('evt');
  const body = JSON.stringify({ id, type: 'SessionEnded', agentId: newId('agt'), tenantId: newId('ten'), timestamp: new Date().toISOString(), data: { conversationId: newId('conv') } });
  const ts = opts.timestampSeconds ?? Math.floor(Date.now() / 1000);
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [WEBHOOK_HEADERS.signature]: signWebhook(opts.secret ?? SECRET, ts, body),
      [WEBHOOK_HEADERS.timestamp]: String(ts),
      [WEBHOOK_HEADERS.deliveryId]: id,
    },
    body,
  });
  await res.arrayBuffer();
  return { id, status: res.status };
}

const count = (text: string) => output.split(text).length - 1;

beforeAll(async () => {
  const port = await spareLoopbackPort();
  url = `http://127.0.0.1:${port}/`;
  child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, '--secret', SECRET, '--port', String(port)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  process.once('exit', killChild);
  await until('listening line', () => output.includes(`listening on http://127.0.0.1:${port}`), 30_000);
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  process.removeListener('exit', killChild);
});

describe('the example webhook receiver (bin/webhook-receiver.ts)', () => {
  it('answers 200 to a correctly signed delivery and logs its type and delivery id', async () => {
    const { id, status } = await deliver();
    expect(status).toBe(200);
    await until('processed line', () => output.includes(`processed SessionEnded ${id}`));
  });

  it('answers 400 to a correctly signed delivery whose timestamp is more than 300 s old, without processing it', async () => {
    const { id, status } = await deliver({ timestampSeconds: Math.floor(Date.now() / 1000) - 301 });
    expect(status).toBe(400);
    await until('rejection line', () => output.includes('rejected 400: stale timestamp'));
    expect(output).not.toContain(id);
  });

  it('answers 401 to a delivery signed with another secret, without processing it', async () => {
    const { id, status } = await deliver({ secret: 'whsec_someone_else_0123456789' });
    expect(status).toBe(401);
    await until('rejection line', () => output.includes('rejected 401: signature mismatch'));
    expect(output).not.toContain(id);
  });

  it('answers 200 to a repeat of a processed delivery id, logs it as a duplicate and processes it once', async () => {
    const first = await deliver();
    expect(first.status).toBe(200);
    // A retry carries a fresh timestamp and signature but the same delivery id.
    const again = await deliver({ id: first.id, timestampSeconds: Math.floor(Date.now() / 1000) + 1 });
    expect(again.status).toBe(200);
    await until('duplicate line', () => output.includes(`duplicate SessionEnded ${first.id}: already processed`));
    expect(count(`processed SessionEnded ${first.id}`)).toBe(1);
  });

  it('is shown in README "Receiving webhooks" exactly as it runs', () => {
    const source = readFileSync(`${ROOT}${SCRIPT}`, 'utf8');
    const core = /\/\/ --- core \(shown in README "Receiving webhooks"\) ---\n([\s\S]*?)\n\/\/ --- end of core ---/.exec(source)?.[1];
    expect(core).toBeTruthy();
    const readme = readFileSync(`${ROOT}README.md`, 'utf8');
    const section = readme.slice(readme.indexOf('## Receiving webhooks'));
    expect(section).toContain(`\`\`\`ts\n${core}\n\`\`\``);
  });
});
