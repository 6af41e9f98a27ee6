import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Admission } from '../../src/admission.js';
import type { AdmissionOptions } from '../../src/admission.js';
import { loadGatewayConfig } from '../../src/config.js';

const logger = pino({ level: 'silent' });
let admission: Admission | undefined;

function admit(opts: Partial<AdmissionOptions>): Admission {
  admission = new Admission({ maxCalls: 0, overloadLagMs: 0, calls: () => 0, logger, ...opts });
  return admission;
}

afterEach(() => {
  admission?.close();
  admission = undefined;
  vi.useRealTimers();
});

describe('gateway admission', () => {
  it('refuses the call that would go over maxCalls, and takes one again below it', () => {
    let calls = 0;
    const a = admit({ maxCalls: 2, calls: () => calls });
    calls = 1;
    expect(a.check()).toBeNull();
    calls = 2;
    expect(a.check()).toEqual({ reason: 'at-capacity', calls: 2, maxCalls: 2 });
    calls = 1;
    expect(a.check()).toBeNull();
  });

  it('refuses every call once draining, with no limit set and whatever the load, counting the calls it carries', () => {
    let calls = 3;
    const a = admit({ calls: () => calls });
    expect(a.check()).toBeNull();
    a.drain();
    expect(a.check()).toEqual({ reason: 'draining', calls: 3 });
    calls = 0;
    expect(a.check()).toEqual({ reason: 'draining', calls: 0 });
    expect(a.callsCarried()).toBe(0);
  });

  it('takes every call with both rules at 0, whatever the load and lag', () => {
    vi.useFakeTimers();
    const a = admit({ calls: () => 10_000, threadLagMs: () => 60_000 });
    vi.advanceTimersByTime(10_000);
    expect(a.check()).toBeNull();
  });

  it('is overloaded after two readings in a row past overloadLagMs, and stays so until the lag is back under half of it', () => {
    vi.useFakeTimers();
    let lag = 0;
    let now = 0;
    const a = admit({ overloadLagMs: 1000, threadLagMs: () => lag, now: () => now, intervalMs: 250 });
    const tick = (): void => {
      now += 250;
      vi.advanceTimersByTime(250);
    };
    lag = 1000;
    tick();
    tick();
    expect(a.check()).toBeNull(); // at the limit, not past it
    // One reading past it is a stall, not overload.
    lag = 5000;
    tick();
    lag = 0;
    tick();
    expect(a.check()).toBeNull();
    lag = 1001;
    tick();
    expect(a.check()).toBeNull();
    tick();
    expect(a.check()).toEqual({ reason: 'overloaded', lagMs: 1001, overloadLagMs: 1000 });
    lag = 700;
    tick();
    expect(a.check()).toMatchObject({ reason: 'overloaded', lagMs: 700 });
    lag = 500;
    tick();
    expect(a.check()).toBeNull();
    expect(a.lastLagMs).toBe(500);
  });

  it('counts its own timer running late as the gateway loop lagging', () => {
    vi.useFakeTimers();
    let now = 0;
    const a = admit({ overloadLagMs: 200, now: () => now, intervalMs: 250 });
    // The loop is stuck twice: each 250 ms tick runs 400 ms late.
    now = 650;
    vi.advanceTimersByTime(250);
    expect(a.check()).toBeNull();
    now = 1300;
    vi.advanceTimersByTime(250);
    expect(a.check()).toEqual({ reason: 'overloaded', lagMs: 400, overloadLagMs: 200 });
    // A tick on time: caught up.
    now = 1550;
    vi.advanceTimersByTime(250);
    expect(a.check()).toBeNull();
  });

  it('is configured by GATEWAY_MAX_CALLS (default none) and GATEWAY_OVERLOAD_LAG_MS (default 500 ms), naming a bad value', () => {
    expect(loadGatewayConfig({})).toMatchObject({ maxCalls: 0, overloadLagMs: 500 });
    expect(loadGatewayConfig({ GATEWAY_MAX_CALLS: '300', GATEWAY_OVERLOAD_LAG_MS: '0' })).toMatchObject({ maxCalls: 300, overloadLagMs: 0 });
    for (const bad of ['-1', '1.5', 'many']) {
      expect(() => loadGatewayConfig({ GATEWAY_MAX_CALLS: bad })).toThrow(/- GATEWAY_MAX_CALLS:/);
      expect(() => loadGatewayConfig({ GATEWAY_OVERLOAD_LAG_MS: bad })).toThrow(/- GATEWAY_OVERLOAD_LAG_MS:/);
    }
  });

  it('drains for GATEWAY_DRAIN_TIMEOUT_MS on shutdown (default 20 s, 0 allowed, at most a day), naming a bad value', () => {
    expect(loadGatewayConfig({})).toMatchObject({ drainTimeoutMs: 20_000 });
    expect(loadGatewayConfig({ GATEWAY_DRAIN_TIMEOUT_MS: '0' })).toMatchObject({ drainTimeoutMs: 0 });
    expect(loadGatewayConfig({ GATEWAY_DRAIN_TIMEOUT_MS: '600000' })).toMatchObject({ drainTimeoutMs: 600_000 });
    for (const bad of ['-1', '1.5', 'long', '86400001']) {
      expect(() => loadGatewayConfig({ GATEWAY_DRAIN_TIMEOUT_MS: bad })).toThrow(/- GATEWAY_DRAIN_TIMEOUT_MS:/);
    }
  });
});
