/**
 * Runs `stop` once on the first SIGINT or SIGTERM, then exits (0, or 1 if stopping
 * failed). Later signals while stopping are ignored, so a double Ctrl-C cannot close
 * resources twice. Every launcher (one-process platform, standalone services) uses it.
 */
export function stopOnSignals(stop: () => Promise<void>, onError: (err: unknown) => void = console.error): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
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
