import { describe, expect, it } from 'vitest';
import { DeliveryDeduper } from '../../src/webhooks/delivery-deduper.js';

function clock(startMs = 1_000_000) {
  let nowMs = startMs;
  return { now: () => nowMs, advance: (ms: number) => void (nowMs += ms) };
}

describe('DeliveryDeduper', () => {
  it('accepts an id the first time and refuses its repeats', () => {
    const dedupe = new DeliveryDeduper({ now: clock().now });
    expect(dedupe.firstTime('evt_1')).toBe(true);
    expect(dedupe.firstTime('evt_1')).toBe(false);
    expect(dedupe.firstTime('evt_1')).toBe(false);
    expect(dedupe.firstTime('evt_2')).toBe(true);
    expect(dedupe.size).toBe(2);
  });

  it('accepts an id again once its TTL has passed, counted from the first sighting', () => {
    const time = clock();
    const dedupe = new DeliveryDeduper({ ttlMs: 1_000, now: time.now });
    expect(dedupe.firstTime('evt_1')).toBe(true);
    time.advance(600);
    expect(dedupe.firstTime('evt_1')).toBe(false); // a repeat does not extend the TTL
    time.advance(399);
    expect(dedupe.firstTime('evt_1')).toBe(false);
    time.advance(1);
    expect(dedupe.firstTime('evt_1')).toBe(true);
    expect(dedupe.firstTime('evt_1')).toBe(false);
  });

  it('defaults to a 24 h TTL', () => {
    const time = clock();
    const dedupe = new DeliveryDeduper({ now: time.now });
    dedupe.firstTime('evt_1');
    time.advance(24 * 3_600_000 - 1);
    expect(dedupe.firstTime('evt_1')).toBe(false);
    time.advance(1);
    expect(dedupe.firstTime('evt_1')).toBe(true);
  });

  it('drops expired ids from its size', () => {
    const time = clock();
    const dedupe = new DeliveryDeduper({ ttlMs: 100, now: time.now });
    dedupe.firstTime('a');
    time.advance(50);
    dedupe.firstTime('b');
    expect(dedupe.size).toBe(2);
    time.advance(50);
    expect(dedupe.size).toBe(1);
    time.advance(50);
    expect(dedupe.size).toBe(0);
  });

  it('evicts the oldest ids beyond maxEntries', () => {
    const dedupe = new DeliveryDeduper({ maxEntries: 3, now: clock().now });
    for (const id of ['a', 'b', 'c', 'd']) expect(dedupe.firstTime(id)).toBe(true);
    expect(dedupe.size).toBe(3);
    expect(dedupe.firstTime('b')).toBe(false);
    expect(dedupe.firstTime('d')).toBe(false);
    expect(dedupe.firstTime('a')).toBe(true); // evicted, so accepted again (and 'b' goes now)
    expect(dedupe.firstTime('b')).toBe(true);
    expect(dedupe.size).toBe(3);
  });

  it('accepts a forgotten id again, e.g. after its processing failed', () => {
    const dedupe = new DeliveryDeduper({ now: clock().now });
    expect(dedupe.firstTime('evt_1')).toBe(true);
    dedupe.forget('evt_1');
    expect(dedupe.size).toBe(0);
    expect(dedupe.firstTime('evt_1')).toBe(true);
    expect(dedupe.firstTime('evt_1')).toBe(false);
    dedupe.forget('never-seen');
  });

  it('refuses nonsensical bounds', () => {
    expect(() => new DeliveryDeduper({ ttlMs: 0 })).toThrow(RangeError);
    expect(() => new DeliveryDeduper({ maxEntries: 0 })).toThrow(RangeError);
  });
});
