/**
 * The part the two server processes of `pnpm bench:calls` (gateway under test, bare relay)
 * share, so they are driven and sampled identically: read the start message, start the
 * server, sample the process, answer `window`/`stop`, report `ready`, and on stop send the
 * last sample and the steady-state loop delay before exiting. SIGTERM or losing the parent
 * closes without a report.
 */
import type { ServerMessage, ServerStart, ToServer } from './ipc.js';
import { ProcessSampler } from './process-sampler.js';

export const sendToParent = (m: ServerMessage): void => {
  process.send!(m);
};

/** A started server: what `ready` announces, its active calls, and how to close it. */
export interface BenchServer {
  ready: Omit<Extract<ServerMessage, { kind: 'ready' }>, 'kind'>;
  activeCalls(): number;
  close(): Promise<void>;
}

/** Runs this process as a bench server: `start` is called with the parent's first message. */
export function runBenchServer(start: (opts: ServerStart) => Promise<BenchServer>): void {
  process.once('message', (opts: ServerStart) => {
    serve(opts, start).catch((err: unknown) => {
      sendToParent({ kind: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      process.exit(1);
    });
  });
}

async function serve(opts: ServerStart, start: (opts: ServerStart) => Promise<BenchServer>): Promise<void> {
  const server = await start(opts);
  const sampler = new ProcessSampler({ intervalMs: opts.sampleIntervalMs, activeCalls: () => server.activeCalls(), onSample: (sample) => sendToParent({ kind: 'sample', sample }) });
  let closing = false;
  const close = async (report: boolean) => {
    if (closing) return;
    closing = true;
    const lastSample = sampler.sample();
    const steadyLoopDelay = sampler.windowDelay();
    sampler.stop();
    await server.close();
    if (report && process.connected) process.send!({ kind: 'stopped', steadyLoopDelay, lastSample } satisfies ServerMessage, () => process.exit(0));
    else process.exit(0);
  };
  process.on('message', (m: ToServer) => {
    if (m.kind === 'window') sampler.window(m.fromAt, m.toAt);
    else if (m.kind === 'stop') void close(true);
  });
  process.once('SIGTERM', () => void close(false));
  process.once('disconnect', () => void close(false));
  sendToParent({ kind: 'ready', ...server.ready });
}
