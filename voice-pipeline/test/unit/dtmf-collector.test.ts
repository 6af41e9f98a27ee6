import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DtmfCollector } from '../../src/processors/dtmf-collector.js';
import { frames, Harness } from './harness.js';

function setup(enabled = true) {
  const origin = Date.now();
  const clock = () => Date.now() - origin;
  const h = new Harness(new DtmfCollector({ enabled, clock }));
  /** Presses a key at the current session time. */
  const press = (digit: string) => h.down(frames.dtmf(digit, clock()));
  return { h, press };
}

describe('DtmfCollector', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gathers digits into one turn ended by #', () => {
    const { h, press } = setup();
    vi.advanceTimersByTime(1000);
    press('1');
    vi.advanceTimersByTime(300);
    press('2');
    expect(h.out.down).toEqual([]);
    vi.advanceTimersByTime(200);
    press('#');
    expect(h.downOf('user.turn')).toEqual([
      { kind: 'user.turn', at: 1500, turn: { text: '12', source: 'dtmf', words: [], confidence: 1, startAt: 1000, endAt: 1500, speechEndAt: 1500, sttFinalAt: 1500 } },
    ]);
    // The keys themselves are consumed, and the timer is gone.
    vi.advanceTimersByTime(5000);
    expect(h.kinds('down')).toEqual(['user.turn']);
  });

  it('ends the turn 1.5 s after the last digit', () => {
    const { h, press } = setup();
    press('4');
    vi.advanceTimersByTime(1000);
    press('2');
    vi.advanceTimersByTime(1499);
    expect(h.downOf('user.turn')).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(h.downOf('user.turn').map((f) => [f.turn.text, f.at])).toEqual([['42', 2500]]);
    press('7');
    vi.advanceTimersByTime(1500);
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['42', '7']);
  });

  it('ignores a # with no digits before it', () => {
    const { h, press } = setup();
    press('#');
    vi.advanceTimersByTime(2000);
    expect(h.out.down).toEqual([]);
  });

  it('drops digits when DTMF is disabled', () => {
    const { h, press } = setup(false);
    press('1');
    press('#');
    vi.advanceTimersByTime(2000);
    expect(h.out.down).toEqual([]);
  });

  it('passes other frames on in both directions', () => {
    const { h } = setup();
    const audio = frames.audio(0, true);
    const started = frames.audioStarted('t1');
    h.down(audio).up(started);
    expect(h.out).toEqual({ down: [audio], up: [started] });
  });

  it('cancels a pending turn on close', async () => {
    const { h, press } = setup();
    press('9');
    await h.close();
    vi.advanceTimersByTime(2000);
    expect(h.out.down).toEqual([]);
  });
});
