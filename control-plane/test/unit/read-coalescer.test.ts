import { describe, expect, it } from 'vitest';
import { ReadCoalescer } from '../../src/db/read-coalescer.js';

/** A read the test settles by hand, recording when it was issued. */
function manualReads() {
  const issued: Array<{ resolve: (v: number) => void; reject: (e: Error) => void }> = [];
  let value = 0;
  const read = () =>
    new Promise<number>((resolve, reject) => {
      const at = value; // what the store holds when the read is issued
      issued.push({ resolve: () => resolve(at), reject });
    });
  return { issued, read, write: (v: number) => (value = v) };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('ReadCoalescer', () => {
  it('answers requests that arrive during a read from the next read, issued after they arrived', async () => {
    const c = new ReadCoalescer<string, number>();
    const s = manualReads();
    const first = c.read('a', s.read);
    s.write(1); // committed while the first read is in flight, before the next requests arrive
    const second = c.read('a', s.read);
    const third = c.read('a', s.read);
    expect(s.issued).toHaveLength(1);
    s.issued[0]!.resolve(0);
    expect(await first).toBe(0);
    await tick();
    expect(s.issued).toHaveLength(2); // one read for both waiting requests
    s.issued[1]!.resolve(0);
    expect(await second).toBe(1);
    expect(await third).toBe(1);
    await tick();
    expect(c.inFlight).toBe(0);
  });

  it('keeps keys apart and passes a failed read to its callers only', async () => {
    const c = new ReadCoalescer<string, number>();
    const s = manualReads();
    const a = c.read('a', s.read);
    const b = c.read('b', s.read);
    const aNext = c.read('a', s.read);
    expect(s.issued).toHaveLength(2);
    s.issued[0]!.reject(new Error('connection lost'));
    await expect(a).rejects.toThrow('connection lost');
    await tick();
    s.issued[1]!.resolve(0);
    expect(await b).toBe(0);
    s.issued[2]!.resolve(0);
    expect(await aNext).toBe(0);
    await tick();
    expect(c.inFlight).toBe(0);
  });

  it('turns a read that throws synchronously into a rejection', async () => {
    const c = new ReadCoalescer<string, number>();
    await expect(
      c.read('a', () => {
        throw new Error('bad');
      }),
    ).rejects.toThrow('bad');
    await tick();
    expect(c.inFlight).toBe(0);
  });
});
