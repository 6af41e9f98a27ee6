import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spareLoopbackPort } from '@vap/shared';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A media gateway in its own process, running media-gateway/src/server.ts exactly as deployed. */
export interface GatewayProcess {
  readonly child: ChildProcess;
  /** Its HTTP base URL (`/healthz`, `/readyz`). */
  readonly url: string;
  /** Its exit code (null when a signal killed it). */
  readonly exited: Promise<number | null>;
  /** What it printed so far, stdout and stderr. */
  output(): string;
  /** SIGKILL, if it still runs. */
  kill(): void;
}

/**
 * A control plane here on NATS (`startPlatform('nats')`, whose own in-process gateway stays
 * idle) and a media gateway process on the same NATS subjects, whose stream URL the control
 * plane hands to callers. `gatewayEnv` is added to the gateway's environment. Whatever happens
 * to this test worker, the gateway process goes with it.
 */
export async function platformWithGatewayProcess(platformEnv: Record<string, string>, gatewayEnv: Record<string, string>): Promise<{ p: Platform; gateway: GatewayProcess }> {
  // Between spareLoopbackPort and the child's listen the port can be taken by a parallel test (CI once:
  // EADDRINUSE): then both start again on another port, up to 5 times.
  for (let attempt = 1; ; attempt++) {
    const port = await spareLoopbackPort();
    const p = await startPlatform('nats', { ...platformEnv, MEDIA_GATEWAY_PUBLIC_URL: `ws://127.0.0.1:${port}` });
    const gateway = launch(port, p.natsSubjectPrefix, gatewayEnv);
    try {
      await healthy(gateway);
      return { p, gateway };
    } catch (err) {
      gateway.kill();
      await p.close();
      if (attempt >= 5 || !String(err).includes('EADDRINUSE')) throw err;
    }
  }
}

function launch(port: number, natsSubjectPrefix: string, gatewayEnv: Record<string, string>): GatewayProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'media-gateway/src/server.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      NATS_URL: process.env.TEST_NATS_URL,
      NATS_SUBJECT_PREFIX: natsSubjectPrefix,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      MEDIA_GATEWAY_PUBLIC_URL: `ws://127.0.0.1:${port}`,
      TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
      LOG_LEVEL: 'warn',
      ...gatewayEnv,
    },
  });
  const output: string[] = [];
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const kill = (): void => void child.kill('SIGKILL');
  process.once('exit', kill);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      process.removeListener('exit', kill);
      resolve(code);
    }),
  );
  return { child, url: `http://127.0.0.1:${port}`, exited, output: () => output.join(''), kill };
}

/** Waits for the gateway's health endpoint, 30 s at most. */
async function healthy(gateway: GatewayProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (gateway.child.exitCode !== null) throw new Error(`gateway process exited with ${gateway.child.exitCode}:\n${gateway.output()}`);
    const ok = await fetch(`${gateway.url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`gateway process not healthy within 30 s:\n${gateway.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
