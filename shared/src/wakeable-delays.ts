/**
 * Delays a shutdown can cut short: a retry loop waits with {@link sleep} between attempts,
 * and `wakeAll` ends every wait in progress at once (the loop then makes its next attempt).
 */
export class WakeableDelays {
  private readonly sleepers = new Set<() => void>();

  /** Resolves after `ms` (at least 0), or at the next {@link wakeAll}. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, ms));
      this.sleepers.add(wake);
    });
  }

  /** Ends every wait in progress now. */
  wakeAll(): void {
    for (const wake of [...this.sleepers]) wake();
  }
}
