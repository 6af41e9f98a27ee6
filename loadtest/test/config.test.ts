import { describe, expect, it } from 'vitest';
import { BenchConfigError, loadBenchConfig } from '../src/config.js';

describe('loadBenchConfig', () => {
  it('runs 10 s on 10 connections with a 2 s warm-up and an embedded Postgres by default', () => {
    expect(loadBenchConfig([], {})).toEqual({ durationSec: 10, warmupSec: 2, connections: 10, serverDatabaseUrl: undefined });
  });

  it('takes --duration over BENCH_DURATION_SECONDS, and reads DATABASE_URL', () => {
    const c = loadBenchConfig(['--duration', '5', '--connections', '20'], { BENCH_DURATION_SECONDS: '30', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' });
    expect(c).toMatchObject({ durationSec: 5, connections: 20, serverDatabaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres' });
    expect(loadBenchConfig([], { BENCH_DURATION_SECONDS: '30' }).durationSec).toBe(30);
  });

  it('ignores the bare -- that pnpm passes through', () => {
    expect(loadBenchConfig(['--', '--duration', '5'], {}).durationSec).toBe(5);
  });

  it('lists every bad setting at once', () => {
    let error: unknown;
    try {
      loadBenchConfig(['--duration', '0', '--connections', 'many'], { DATABASE_URL: 'not a url' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(BenchConfigError);
    expect((error as BenchConfigError).problems).toEqual([
      '--duration: must be an integer from 1 to 300 (got "0")',
      '--connections: must be an integer from 1 to 1000 (got "many")',
      'DATABASE_URL: must be a postgres:// URL',
    ]);
  });

  it('refuses unknown flags', () => {
    expect(() => loadBenchConfig(['--durations', '5'], {})).toThrow(BenchConfigError);
  });
});
