/**
 * A signal this soon after the first, ms, is taken for the same one: Ctrl-C reaches every
 * process of the terminal's foreground group, and launchers in front of ours (the tsx CLI under
 * `pnpm start`) relay it to us once more within tens of milliseconds.
 */
export const SAME_SIGNAL_WITHIN_MS = 1000;

/** The errors of writing to a terminal that is gone (EIO: hung up) or a reader that is (EPIPE). */
function isHangup(err: NodeJS.ErrnoException): boolean {
  return err.code === 'EIO' || err.code === 'EPIPE';
}

/**
 * Makes a log destination (pino's SonicBoom, as `pino.destination()` gives) stop writing,
 * quietly, once its terminal is gone. After SIGHUP every write to the closed terminal fails
 * with EIO, which pino re-emits as an 'error' nobody handles (it is quiet only on EPIPE): the
 * process would crash in the middle of its stop. Returns `stream`.
 */
export function quietOnHangup<S extends NodeJS.EventEmitter & { write: unknown; end: unknown; flushSync?: unknown; destroy?: unknown }>(stream: S): S {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (!isHangup(err)) throw err;
    const noop = () => true;
    Object.assign(stream, { write: noop, end: noop, flushSync: noop, destroy: noop });
  });
  return stream;
}

/**
 * Runs `stop` once on the first SIGINT, SIGTERM or SIGHUP (the terminal of `pnpm start`
 * closed: the platform stops as on Ctrl-C instead of dying where it stands), then exits (0,
 * or 1 if stopping failed). A later signal while stopping does not stop again (a double
 * Ctrl-C cannot close resources twice): it aborts `hurry`, the signal `stop` is given, so that
 * a stop that waits (a media gateway draining its calls) can cut the wait short. A signal
 * within {@link SAME_SIGNAL_WITHIN_MS} of the first is ignored. After SIGHUP, writes to the
 * gone terminal by `process.stdout`/`stderr` fail quietly (log destinations: {@link quietOnHangup}).
 * Every launcher (one-process platform, standalone services) uses it.
 */
export function stopOnSignals(stop: (hurry: AbortSignal) => Promise<void>, onError: (err: unknown) => void = console.error): void {
  const hurry = new AbortController();
  let firstAt: number | undefined;
  const handler = () => {
    if (firstAt !== undefined) {
      if (performance.now() - firstAt >= SAME_SIGNAL_WITHIN_MS) hurry.abort();
      return;
    }
    firstAt = performance.now();
    stop(hurry.signal).then(
      () => process.exit(0),
      (err: unknown) => {
        onError(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  let hungUp = false;
  process.on('SIGHUP', () => {
    if (!hungUp) {
      hungUp = true;
      for (const out of [process.stdout, process.stderr]) {
        out.on('error', (err: NodeJS.ErrnoException) => {
          if (!isHangup(err)) throw err;
        });
      }
    }
    handler();
  });
}
