import { describe, expect, it } from 'vitest';
import { BenchConfigError, loadBenchConfig, loadWebhookBenchConfig, openLoopShape, runsScenario } from '../src/config.js';

describe('loadBenchConfig', () => {
  it('runs every scenario 10 s on 10 connections, the open loop at 1000 req/s, with a 2 s warm-up and an embedded Postgres by default', () => {
    expect(loadBenchConfig([], {})).toEqual({
      scenario: 'all',
      durationSec: 10,
      warmupSec: 2,
      connections: 10,
      ratePerSec: 1000,
      openLoop: { connections: 200, phases: 40 },
      resultsDir: undefined,
      serverDatabaseUrl: undefined,
      cpuProfDir: undefined,
    });
  });

  it('reads --scenario, --rate, --warmup, --results-dir and --cpu-prof', () => {
    const c = loadBenchConfig(['--scenario', 'mixed', '--rate', '100', '--warmup', '1', '--results-dir', '/tmp/x', '--cpu-prof', '/tmp/prof'], {});
    expect(c).toMatchObject({ scenario: 'mixed', ratePerSec: 100, warmupSec: 1, resultsDir: '/tmp/x', cpuProfDir: '/tmp/prof', openLoop: { connections: 20, phases: 20 } });
    expect(loadBenchConfig(['--warmup', '0'], {}).warmupSec).toBe(0);
    for (const s of ['get-by-id', 'create', 'all'] as const) expect(loadBenchConfig(['--scenario', s], {}).scenario).toBe(s);
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
      loadBenchConfig(['--duration', '0', '--connections', 'many', '--cpu-prof', ' '], { DATABASE_URL: 'not a url' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(BenchConfigError);
    expect((error as BenchConfigError).problems).toEqual([
      '--duration: must be an integer from 1 to 300 (got "0")',
      '--connections: must be an integer from 1 to 1000 (got "many")',
      'DATABASE_URL: must be a postgres:// URL',
      '--cpu-prof: must not be empty',
    ]);
  });

  it('names a bad scenario, rate or warm-up', () => {
    let error: unknown;
    try {
      loadBenchConfig(['--scenario', 'mixd', '--rate', '20001', '--warmup=-1'], {});
    } catch (err) {
      error = err;
    }
    expect((error as BenchConfigError).problems).toEqual([
      '--scenario: must be one of get-by-id, create, mixed, all (got "mixd")',
      '--warmup: must be an integer from 0 to 60 (got "-1")',
      '--rate: must be an integer from 1 to 20000 (got "20001")',
    ]);
  });

  it('refuses unknown flags', () => {
    expect(() => loadBenchConfig(['--durations', '5'], {})).toThrow(BenchConfigError);
  });
});

describe('runsScenario', () => {
  it('runs every scenario for all and only the chosen one otherwise', () => {
    const each = ['get-by-id', 'create', 'mixed'] as const;
    expect(each.map((s) => runsScenario('all', s))).toEqual([true, true, true]);
    expect(each.map((s) => runsScenario('mixed', s))).toEqual([false, false, true]);
    expect(each.map((s) => runsScenario('get-by-id', s))).toEqual([true, false, false]);
  });
});

describe('openLoopShape', () => {
  it('gives one connection per 5 req/s, at most 1000, over at most 40 phases', () => {
    expect(openLoopShape(1000)).toEqual({ connections: 200, phases: 40 });
    expect(openLoopShape(101)).toEqual({ connections: 21, phases: 21 });
    expect(openLoopShape(3)).toEqual({ connections: 1, phases: 1 });
    expect(openLoopShape(20_000)).toEqual({ connections: 1000, phases: 40 });
  });
});

describe('loadWebhookBenchConfig', () => {
  it('stages 500 events for 4 webhooks at the control plane\'s default concurrency of 32 by default', () => {
    expect(loadWebhookBenchConfig([], {})).toEqual({ events: 500, webhooks: 4, concurrency: 32, serverDatabaseUrl: undefined });
  });

  it('reads --events, --webhooks (after a bare --), WEBHOOK_CONCURRENCY and DATABASE_URL', () => {
    const c = loadWebhookBenchConfig(['--', '--events', '50', '--webhooks', '2'], { WEBHOOK_CONCURRENCY: '8', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' });
    expect(c).toEqual({ events: 50, webhooks: 2, concurrency: 8, serverDatabaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres' });
  });

  it('keeps a run bounded: lists every out-of-range setting at once', () => {
    let error: unknown;
    try {
      loadWebhookBenchConfig(['--events', '2001', '--webhooks', '0'], { WEBHOOK_CONCURRENCY: '1.5' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(BenchConfigError);
    expect((error as BenchConfigError).problems).toEqual([
      '--events: must be an integer from 1 to 2000 (got "2001")',
      '--webhooks: must be an integer from 1 to 16 (got "0")',
      'WEBHOOK_CONCURRENCY: must be an integer from 1 to 1000 (got "1.5")',
    ]);
  });

  it('refuses the API benchmark\'s flags', () => {
    expect(() => loadWebhookBenchConfig(['--duration', '5'], {})).toThrow(BenchConfigError);
  });
});
