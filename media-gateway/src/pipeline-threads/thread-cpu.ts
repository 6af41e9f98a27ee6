/**
 * CPU time of single threads of this process, so the gateway can say where its CPU goes:
 * its event loop (carrier sockets, pacer), each pipeline thread, and the rest (V8's GC and
 * compiler threads, libuv's pool). `process.cpuUsage()` only gives the sum, and Node 20 has
 * no per-thread reading, so this reads Linux's `/proc`. Elsewhere every reading is null.
 */
import { readFileSync, readlinkSync } from 'node:fs';

/**
 * `/proc/<pid>/task/<tid>/stat` counts CPU time in USER_HZ ticks, which Linux fixes at 100 a
 * second in its user ABI whatever the kernel's own tick rate: readings have 10 ms steps.
 */
const MS_PER_TICK = 10;

/** The calling thread's OS id (Linux: from `/proc/thread-self`); null elsewhere. */
export function currentThreadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/** `/proc/self/task/<tid>/<file>` as text; null when it cannot be read (not Linux, or the thread has exited). */
function taskFile(tid: number, file: 'stat' | 'schedstat'): string | null {
  try {
    return readFileSync(`/proc/self/task/${tid}/${file}`, 'latin1');
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system) thread `tid` of this process has used since it started, ms, in
 * 10 ms steps; null when it cannot be read (not Linux, or the thread has exited).
 */
export function threadCpuMs(tid: number): number | null {
  const stat = taskFile(tid, 'stat');
  if (stat === null) return null;
  // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so fields count from the last ')'.
  // After it, state is field 3 of proc(5); utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) * MS_PER_TICK : null;
}

/**
 * Time thread `tid` of this process has spent ready to run but waiting for a core since it
 * started, ms (the second field of `/proc/<pid>/task/<tid>/schedstat`, nanoseconds: the
 * scheduler's run-queue wait). A paced loop that waits for a core sends its frames late
 * however little CPU it uses: this tells that apart from the loop's own work. Null when it
 * cannot be read (not Linux, a kernel without schedstats, or the thread has exited).
 */
export function threadRunQueueWaitMs(tid: number): number | null {
  const schedstat = taskFile(tid, 'schedstat');
  if (schedstat === null) return null;
  const waitNs = Number(schedstat.trim().split(' ')[1]);
  return Number.isFinite(waitNs) ? waitNs / 1e6 : null;
}
