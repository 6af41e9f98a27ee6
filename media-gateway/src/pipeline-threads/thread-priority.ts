/**
 * The scheduling priority of a pipeline thread, relative to the gateway's event loop. The loop
 * sends every call's 20 ms frames and must run first when the cores are busy: a pipeline
 * waiting a few ms is not heard, a frame sent a few ms late is. So a pipeline thread runs
 * {@link PIPELINE_THREAD_NICE_STEPS} nice steps below the thread that started it (nice +10 under a
 * gateway at 0), and a gateway started at another priority (systemd `Nice=`, `nice -n`) takes
 * its pipelines along instead of leaving them at a fixed value above or below the rest of the
 * machine. Linux; elsewhere, and where it is refused, the thread runs at the loop's priority.
 */
import { getPriority, setPriority } from 'node:os';

export const PIPELINE_THREAD_NICE_STEPS = 10;

/** Linux's lowest priority. */
const MAX_NICE = 19;

/** The nice value of a pipeline thread started by a thread at nice `startedBy`. */
export function pipelineThreadNice(startedBy: number): number {
  return Math.min(MAX_NICE, startedBy + PIPELINE_THREAD_NICE_STEPS);
}

/**
 * Lowers the calling pipeline thread (OS id `tid`) below the loop that started it. A new thread
 * starts at its creator's nice, so its own value at start is the loop's. Without a thread id (not
 * Linux) or where the system refuses, the thread stays at the loop's priority.
 */
export function lowerPipelineThreadPriority(tid: number | null): void {
  if (tid === null) return;
  try {
    setPriority(tid, pipelineThreadNice(getPriority(tid)));
  } catch {
    // Refused: same priority as the loop.
  }
}
