/**
 * A signal this soon after the first, ms, is taken for the same one: Ctrl-C reaches every
 * process of the terminal's foreground group, and launchers in front of ours (the tsx CLI under
 * `pnpm start`) relay it to us once more within tens of milliseconds.
 */
export const SAME_SIGNAL_WITHIN_MS = 1000;

/**
 * Runs `stop` once on the first SIGINT or SIGTERM, then exits (0, or 1 if stopping
 * failed). A later signal while stopping does not stop again (a double Ctrl-C cannot close
 * resources twice): it aborts `hurry`, the signal `stop` is given, so that a stop that waits
 * (a media gateway draining its calls) can cut the wait short. A signal within
 * {@link SAME_SIGNAL_WITHIN_MS} of the first is ignored. Every launcher (one-process
 * platform, standalone services) uses it.
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
}
