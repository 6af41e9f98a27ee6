import { describe, expect, it } from 'vitest';
import { OutageRetry } from '../../src/modules/conversations/outage-retry.js';

// The shape pg-pool rejects with when Postgres refuses connections (see database-unavailable.test.ts for the real one).
const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' });

describe('OutageRetry', () => {
  it('retries work while the database is unreachable and returns its result', async () => {
    const retry = new OutageRetry({ firstDelayMs: 5 });
    let attempts = 0;
    const result = await retry.run(async () => {
      attempts += 1;
      if (attempts < 4) throw refused();
      return 'stored';
    });
    expect(result).toBe('stored');
    expect(attempts).toBe(4);
    expect(retry.size).toBe(0);
  });

  it('does not retry another error (it would fail again)', async () => {
    const retry = new OutageRetry({ firstDelayMs: 5 });
    let attempts = 0;
    await expect(
      retry.run(async () => {
        attempts += 1;
        throw Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' });
      }),
    ).rejects.toThrow('duplicate key');
    expect(attempts).toBe(1);
  });

  it('gives up after giveUpAfterMs, and beyond maxWaiting at once', async () => {
    const retry = new OutageRetry({ firstDelayMs: 10, giveUpAfterMs: 100, maxWaiting: 1 });
    const startedAt = performance.now();
    const first = retry.run(async () => Promise.reject(refused()));
    await new Promise((r) => setTimeout(r, 5));
    expect(retry.size).toBe(1);
    let secondAttempts = 0;
    await expect(retry.run(async () => (secondAttempts++, Promise.reject(refused())))).rejects.toThrow('ECONNREFUSED');
    expect(secondAttempts).toBe(1);
    await expect(first).rejects.toThrow('ECONNREFUSED');
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(95);
    expect(retry.size).toBe(0);
  });

  it('close gives waiting work one last attempt at once', async () => {
    const retry = new OutageRetry({ firstDelayMs: 60_000 });
    let attempts = 0;
    const waiting = retry.run(async () => (attempts++, Promise.reject(refused())));
    await new Promise((r) => setTimeout(r, 5));
    const startedAt = performance.now();
    retry.close();
    await expect(waiting).rejects.toThrow('ECONNREFUSED');
    expect(attempts).toBe(2);
    expect(performance.now() - startedAt).toBeLessThan(1000);
  });
});
