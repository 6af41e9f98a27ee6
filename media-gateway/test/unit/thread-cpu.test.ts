import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { currentThreadId, threadCpuMs } from '../../src/pipeline-threads/thread-cpu.js';

/** A thread that reports its OS id, spins for `spinMs` of wall time, then says so and waits to be terminated. */
const SPINNER = `
const { parentPort } = require('node:worker_threads');
const { readlinkSync } = require('node:fs');
parentPort.once('message', (spinMs) => {
  const until = performance.now() + spinMs;
  while (performance.now() < until);
  parentPort.postMessage('spun');
});
parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));
setInterval(() => {}, 1000);
`;

function next(worker: Worker): Promise<unknown> {
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

describe.runIf(process.platform === 'linux')('thread CPU time (/proc)', () => {
  it("reads one thread's CPU time: a spinning thread's grows, the idle waiting thread's does not", async () => {
    const me = currentThreadId();
    expect(me).not.toBeNull();
    const worker = new Worker(SPINNER, { eval: true });
    try {
      const tid = (await next(worker)) as number;
      expect(tid).not.toBe(me);
      const workerBefore = threadCpuMs(tid)!;
      const mineBefore = threadCpuMs(me!)!;
      const spun = next(worker);
      worker.postMessage(400);
      await spun;
      const workerUsed = threadCpuMs(tid)! - workerBefore;
      const mineUsed = threadCpuMs(me!)! - mineBefore;
      // 400 ms of wall time spinning: at least a good share of it on CPU even on a busy machine, never more (10 ms ticks).
      expect(workerUsed).toBeGreaterThanOrEqual(150);
      expect(workerUsed).toBeLessThanOrEqual(420);
      // This thread only waited for the message meanwhile.
      expect(mineUsed).toBeLessThan(workerUsed / 2);
      expect(workerUsed % 10).toBe(0);
    } finally {
      await worker.terminate();
    }
  });

  it('is null for a thread that is not (or no longer) in this process', async () => {
    const worker = new Worker(SPINNER, { eval: true });
    const tid = (await next(worker)) as number;
    expect(threadCpuMs(tid)).not.toBeNull();
    await worker.terminate();
    // The OS thread is joined on terminate; its /proc entry goes with it.
    expect(threadCpuMs(tid)).toBeNull();
    expect(threadCpuMs(2 ** 31 - 1)).toBeNull();
  });
});
