/**
 * Runs one benchmark to completion within a time budget and exits with its code. What it
 * started is closed exactly once, on every way out: normal end, failure, overrun (exit 1),
 * SIGINT (130) or SIGTERM (143). `shutDown` must tolerate parts that were never started.
 */
export async function runBounded(opts: { budgetMs: number; run: () => Promise<number>; shutDown: () => Promise<void> }): Promise<never> {
  let closing: Promise<void> | undefined;
  const shutDown = () => (closing ??= opts.shutDown());
  const deadline = setTimeout(() => {
    console.error(`benchmark overran its ${Math.round(opts.budgetMs / 1000)} s budget; stopping`);
    void shutDown().finally(() => process.exit(1));
  }, opts.budgetMs);
  process.once('SIGINT', () => void shutDown().finally(() => process.exit(130)));
  process.once('SIGTERM', () => void shutDown().finally(() => process.exit(143)));

  let code = 1;
  try {
    code = await opts.run();
  } catch (err) {
    console.error('benchmark failed:', err);
  } finally {
    await shutDown();
    clearTimeout(deadline);
  }
  process.exit(code);
}
