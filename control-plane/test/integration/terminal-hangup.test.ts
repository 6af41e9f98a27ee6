import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Closing the terminal of `pnpm start` hangs it up: SIGHUP, after which every write to the
// terminal fails with EIO. A process whose launcher stops on signals (stopOnSignals) and logs
// with the platform's logger (createLogger) must stop as on Ctrl-C (the gateway drains its
// calls, the embedded Postgres is stopped) and not crash on its first log line. A real
// terminal: util-linux `script` gives the process a pseudo-terminal, and killing `script`
// hangs it up, as closing a terminal window does.

const logger = fileURLToPath(new URL('../../src/logger.ts', import.meta.url));
const shutdown = fileURLToPath(new URL('../../../shared/src/shutdown.ts', import.meta.url));
const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;

/** A process on a terminal of its own whose stop logs for half a second; it notes what happened in `marker`. */
function launchOnTerminal(marker: string) {
  const program = `
    import { appendFileSync } from 'node:fs';
    import { createLogger } from ${JSON.stringify(logger)};
    import { stopOnSignals } from ${JSON.stringify(shutdown)};
    const log = createLogger('info', 'hangup-test');
    const note = (line) => appendFileSync(${JSON.stringify(marker)}, line + '\\n');
    appendFileSync(${JSON.stringify(`${marker}.pid`)}, String(process.pid));
    stopOnSignals(async () => {
      note('stop');
      for (let i = 0; i < 5; i++) {
        log.info({ i }, 'still stopping');
        console.log('and on the console');
        await new Promise((r) => setTimeout(r, 100));
      }
      note('stopped');
    });
    process.on('exit', (code) => note('exit ' + code));
    log.info('ready');
    setInterval(() => {}, 1000);
  `;
  const file = path.join(path.dirname(marker), 'program.mjs');
  writeFileSync(file, program);
  const command = `exec ${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(file)}`;
  const terminal = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = new Promise<void>((resolve) =>
    terminal.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"msg":"ready"')) resolve();
    }),
  );
  return { terminal, ready };
}

describe.skipIf(!hasScript)('a launcher whose terminal closes (SIGHUP)', () => {
  it('stops as on Ctrl-C, its logging to the gone terminal failing quietly, and exits 0', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vap-hangup-'));
    try {
      const marker = path.join(dir, 'marker');
      const { terminal, ready } = launchOnTerminal(marker);
      await ready;
      terminal.kill('SIGKILL');
      const noted = () => {
        try {
          return readFileSync(marker, 'utf8');
        } catch {
          return '';
        }
      };
      await expect.poll(noted, { timeout: 10_000, interval: 100 }).toContain('exit');
      expect(noted()).toBe('stop\nstopped\nexit 0\n');
    } finally {
      // A process that did not stop (without quietOnHangup it hangs on its first log line) is not left running.
      try {
        process.kill(Number(readFileSync(path.join(dir, 'marker.pid'), 'utf8')), 'SIGKILL');
      } catch {
        // gone already, as it should be
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
