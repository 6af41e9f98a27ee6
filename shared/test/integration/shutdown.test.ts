import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const helper = fileURLToPath(new URL('../../src/shutdown.ts', import.meta.url));

/** A real process using stopOnSignals, whose stop takes 200 ms and prints each call. */
function launch(stopFails: boolean) {
  const script = `
    import { stopOnSignals } from ${JSON.stringify(helper)};
    stopOnSignals(async () => { console.log('stop'); await new Promise((r) => setTimeout(r, 200)); if (${stopFails}) throw new Error('boom'); }, () => console.log('failed'));
    console.log('ready');
    setInterval(() => {}, 1000);
  `;
  // Node itself with tsx's loader, not the tsx CLI: the CLI is a second process relaying
  // signals, and under load it exited 130 on the second SIGINT before our handler ran.
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const ready = new Promise<void>((resolve) => child.stdout.on('data', () => out.includes('ready') && resolve()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, ready, exited, output: () => out };
}

describe('stopOnSignals', () => {
  it('stops once on a double SIGINT and exits 0', async () => {
    const p = launch(false);
    await p.ready;
    p.child.kill('SIGINT');
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(0);
    expect(p.output().match(/stop/g)).toHaveLength(1);
  });

  it('reports a failed stop and exits 1', async () => {
    const p = launch(true);
    await p.ready;
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('failed');
  });
});
