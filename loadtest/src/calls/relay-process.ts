/**
 * Entry of the relay process of `pnpm bench:calls`: the bare relay baseline
 * (relay-server.ts), sampled exactly like the gateway process so their CPU per
 * call-second compare fairly.
 */
import type { ServerMessage, ServerStart, ToServer } from './ipc.js';
import { ProcessSampler } from './process-sampler.js';
import { startRelayServer } from './relay-server.js';

const send = (m: ServerMessage) => process.send!(m);

async function start(opts: ServerStart): Promise<void> {
  const relay = await startRelayServer();
  const sampler = new ProcessSampler({ intervalMs: opts.sampleIntervalMs, activeCalls: () => relay.activeCalls, onSample: (sample) => send({ kind: 'sample', sample }) });
  let closing = false;
  const close = async (report: boolean) => {
    if (closing) return;
    closing = true;
    const lastSample = sampler.sample();
    const steadyLoopDelay = sampler.windowDelay();
    sampler.stop();
    await relay.close();
    if (report && process.connected) process.send!({ kind: 'stopped', steadyLoopDelay, lastSample } satisfies ServerMessage, () => process.exit(0));
    else process.exit(0);
  };
  process.on('message', (m: ToServer) => {
    if (m.kind === 'window') sampler.window(m.fromAt, m.toAt);
    else if (m.kind === 'stop') void close(true);
  });
  process.once('SIGTERM', () => void close(false));
  process.once('disconnect', () => void close(false));
  send({ kind: 'ready', streamUrl: relay.streamUrl, metricsUrl: null, agentId: 'relay', tenantId: 'relay' });
}

process.once('message', (m: ServerStart) => {
  start(m).catch((err: unknown) => {
    send({ kind: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exit(1);
  });
});
