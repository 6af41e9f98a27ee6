import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CallTimers } from '../../src/session/call-timers.js';

function setup(promptAfterMs: number | null = 10_000) {
  const fired: string[] = [];
  const t0 = Date.now();
  const log = (what: string) => () => fired.push(`${what}@${Date.now() - t0}`);
  const timers = new CallTimers({ maxDurationMs: 600_000, idleMs: 30_000, promptAfterMs, onMaxDuration: log('max'), onIdlePrompt: log('prompt'), onIdleTimeout: log('timeout') });
  return { timers, fired };
}

describe('CallTimers', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('prompts after promptAfterMs of caller silence, then times out after idleMs more', () => {
    const { timers, fired } = setup();
    timers.start();
    timers.callerTurn();
    vi.advanceTimersByTime(9_999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['prompt@10000']);
    // The session speaks the prompt (agent turn), then the caller's silence counts again.
    timers.agentTurn();
    vi.advanceTimersByTime(2_000);
    timers.callerTurn();
    vi.advanceTimersByTime(29_999);
    expect(fired).toEqual(['prompt@10000']);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['prompt@10000', 'timeout@42000']);
  });

  it('times out after idleMs without a prompt when silence detection is off', () => {
    const { timers, fired } = setup(null);
    timers.callerTurn();
    vi.advanceTimersByTime(30_000);
    expect(fired).toEqual(['timeout@30000']);
  });

  it('resets both stages on caller activity', () => {
    const { timers, fired } = setup();
    timers.callerTurn();
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual(['prompt@10000']);
    timers.callerTurn();
    vi.advanceTimersByTime(20_000);
    // The caller answers: the clock stops, and the next silence earns a prompt again.
    timers.callerActive();
    vi.advanceTimersByTime(60_000);
    expect(fired).toEqual(['prompt@10000']);
    timers.callerTurn();
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual(['prompt@10000', 'prompt@100000']);
  });

  it('pauses the silence clock while the agent speaks', () => {
    const { timers, fired } = setup();
    timers.callerTurn();
    vi.advanceTimersByTime(9_000);
    timers.agentTurn();
    vi.advanceTimersByTime(60_000);
    expect(fired).toEqual([]);
    // Counting restarts from zero when the agent has finished.
    timers.callerTurn();
    vi.advanceTimersByTime(9_999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['prompt@79000']);
  });

  it('fires the maximum duration however active the call is', () => {
    const { timers, fired } = setup();
    timers.start();
    for (let t = 0; t < 600_000; t += 5_000) {
      timers.callerActive();
      timers.callerTurn();
      vi.advanceTimersByTime(5_000);
    }
    expect(fired).toEqual(['max@600000']);
  });

  it('fires nothing after stop', () => {
    const { timers, fired } = setup();
    timers.start();
    timers.callerTurn();
    timers.stop();
    timers.callerTurn();
    vi.advanceTimersByTime(3_600_000);
    expect(fired).toEqual([]);
  });
});
