import { afterEach, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { arrivalKey, startBenchReceiver } from '../src/bench-receiver.js';
import type { BenchReceiver } from '../src/bench-receiver.js';
import { sendDirect } from '../src/direct-sender.js';
import type { DirectDelivery } from '../src/direct-sender.js';

let receiver: BenchReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

const SECRET_A = 'whsec_aaaaaaaaaaaaaaaaaaaa';
const SECRET_B = 'whsec_bbbbbbbbbbbbbbbbbbbb';

function deliveries(r: BenchReceiver, count: number, secretFor: (path: string) => string): DirectDelivery[] {
  const out: DirectDelivery[] = [];
  for (let i = 0; i < count; i++) {
    const id = newId('evt');
    const body = JSON.stringify({ id, type: 'SessionEnded', data: { n: i } });
    for (const path of ['/hook/0', '/hook/1']) out.push({ origin: r.url, path, secret: secretFor(path), deliveryId: id, body });
  }
  return out;
}

describe('the webhook benchmark receiver and direct sender', () => {
  it('records one arrival per path and delivery id, all verified, over a few keep-alive connections', async () => {
    const r = (receiver = await startBenchReceiver());
    r.route('/hook/0', SECRET_A);
    r.route('/hook/1', SECRET_B);
    const list = deliveries(r, 25, (p) => (p === '/hook/0' ? SECRET_A : SECRET_B));
    const sent = await sendDirect(list, 4, 5000);
    expect(sent.errors).toBe(0);
    expect(r.arrivals.size).toBe(50);
    expect(r.verifyFailures).toBe(0);
    expect(await r.waitFor(50, 10)).toBe(true);
    const first = list[0]!;
    expect(r.arrivals.get(arrivalKey(first.path, first.deliveryId))).toBeGreaterThanOrEqual(sent.sentAtMs.get(arrivalKey(first.path, first.deliveryId))!);
  });

  it('refuses a delivery signed with another webhook\'s secret and counts it, and counts a resend as a duplicate', async () => {
    const r = (receiver = await startBenchReceiver());
    r.route('/hook/0', SECRET_A);
    r.route('/hook/1', SECRET_B);
    const list = deliveries(r, 3, () => SECRET_A);
    const sent = await sendDirect([...list, list[0]!], 2, 5000);
    expect(sent.errors).toBe(3); // the three /hook/1 requests answered 401
    expect(r.verifyFailures).toBe(3);
    expect(r.arrivals.size).toBe(3);
    expect(r.duplicates).toBe(1);
    expect(await r.waitFor(4, 50)).toBe(false);
    r.reset();
    expect([r.arrivals.size, r.verifyFailures, r.duplicates]).toEqual([0, 0, 0]);
  });
});
