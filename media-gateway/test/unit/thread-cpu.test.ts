import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { describe, expect, it, vi } from 'vitest';
import { currentThreadId, threadCpuMs, threadRunQueueWaitMs } from '../../src/pipeline-threads/thread-cpu.js';

/**
 * A thread that reports its OS id, then, when asked, spins until it has used `cpuMs` of CPU
 * by its own /proc reading (so the test does not depend on how busy the machine is; at most
 * 20 s of wall time), says so, and waits to be terminated.
 */
const SPINNER = `
const { parentPort } = require('node:worker_threads');
const { readFileSync, readlinkSync } = require('node:fs');
const ticks = () => { const s = readFileSync('/proc/thread-self/stat', 'latin1'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return Number(f[11]) + Number(f[12]); };
parentPort.once('message', (cpuMs) => {
  const from = ticks();
  const until = performance.now() + 20000;
  while (ticks() - from < cpuMs / 10 && performance.now() < until) for (let i = 0; i < 1e5; i++);
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
      worker.postMessage(300);
      await spun;
      const workerUsed = threadCpuMs(tid)! - workerBefore;
      const mineUsed = threadCpuMs(me!)! - mineBefore;
      // The worker stopped once its own reading passed 300 ms (a tick or two of overshoot at most, in 10 ms steps).
      expect(workerUsed).toBeGreaterThanOrEqual(300);
      expect(workerUsed).toBeLessThanOrEqual(350);
      expect(workerUsed % 10).toBe(0);
      // This thread only waited for the message meanwhile.
      expect(mineUsed).toBeLessThan(workerUsed / 2);
    } finally {
      await worker.terminate();
    }
  });

  it('is null for a thread that is not (or no longer) in this process', async () => {
    const worker = new Worker(SPINNER, { eval: true });
    const tid = (await next(worker)) as number;
    expect(threadCpuMs(tid)).not.toBeNull();
    await worker.terminate();
    // terminate() resolves on the worker's exit event; the OS thread (and its /proc entry) may
    // be gone only a moment later on a busy machine (CI once read it 30 ms after).
    await vi.waitFor(() => expect(threadCpuMs(tid)).toBeNull(), { timeout: 5000, interval: 20 });
    expect(threadCpuMs(2 ** 31 - 1)).toBeNull();
  });

  it("reads a thread's run-queue wait: more spinning threads than cores wait for one, in total at least what the extra thread needs", async () => {
    const spinners = availableParallelism() + 1;
    const workers = Array.from({ length: spinners }, () => new Worker(SPINNER, { eval: true }));
    try {
      const tids = (await Promise.all(workers.map(next))) as number[];
      const before = tids.map((tid) => threadRunQueueWaitMs(tid));
      expect(before.every((ms) => ms !== null && ms >= 0)).toBe(true);
      const spun = workers.map(next);
      for (const w of workers) w.postMessage(300);
      await Promise.all(spun);
      const waited = tids.map((tid, i) => threadRunQueueWaitMs(tid)! - before[i]!);
      // cores + 1 threads each needing 300 ms of CPU: while all spin, one is always queued,
      // so together they waited at least about one thread's share (here: a third of it).
      expect(waited.reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
      expect(waited.every((ms) => ms >= 0)).toBe(true);
    } finally {
      await Promise.all(workers.map((w) => w.terminate()));
    }
    expect(threadRunQueueWaitMs(2 ** 31 - 1)).toBeNull();
  });
});
