import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SAME_SIGNAL_WITHIN_MS } from '../../src/shutdown.js';

const helper = fileURLToPath(new URL('../../src/shutdown.ts', import.meta.url));

/**
 * A real process using stopOnSignals, whose stop prints each call and takes 200 ms, or, with
 * `waitForHurry`, waits for its hurry signal (30 s at most) and prints 'hurried'.
 */
function launch(stopFails: boolean, waitForHurry = false) {
  const script = `
    import { stopOnSignals } from ${JSON.stringify(helper)};
    stopOnSignals(async (hurry) => {
      console.log('stop');
      if (${waitForHurry}) {
        await new Promise((r) => { const t = setTimeout(r, 30000); hurry.addEventListener('abort', () => { clearTimeout(t); console.log('hurried'); r(); }); });
      } else await new Promise((r) => setTimeout(r, 200));
      if (${stopFails}) throw new Error('boom');
    }, () => console.log('failed'));
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

  it('aborts the stop\'s hurry signal on a second signal a second or more later, without stopping twice', async () => {
    const p = launch(false, true);
    await p.ready;
    p.child.kill('SIGTERM');
    await expect.poll(() => p.output()).toContain('stop');
    // Relayed at once (a launcher in front passing Ctrl-C on): the same signal, no hurry.
    p.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, SAME_SIGNAL_WITHIN_MS + 200));
    expect(p.output()).not.toContain('hurried');
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(0);
    expect(p.output().match(/stop/g)).toHaveLength(1);
    expect(p.output()).toContain('hurried');
  });

  it('stops once on SIGHUP (a closed terminal) as on SIGTERM, a second hang-up a second later hurrying it', async () => {
    const p = launch(false, true);
    await p.ready;
    p.child.kill('SIGHUP');
    await expect.poll(() => p.output()).toContain('stop');
    await new Promise((r) => setTimeout(r, SAME_SIGNAL_WITHIN_MS + 200));
    p.child.kill('SIGHUP');
    expect(await p.exited).toBe(0);
    expect(p.output().match(/stop/g)).toHaveLength(1);
    expect(p.output()).toContain('hurried');
  });

  it('reports a failed stop and exits 1', async () => {
    const p = launch(true);
    await p.ready;
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('failed');
  });
});
