import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { BusSubscription, Payload } from '@vap/shared';
import { EndRecordDelivery } from '../../src/end-record-delivery.js';

function record(): Payload<'sessionEnded'> {
  return {
    conversationId: newId('conv'),
    tenantId: newId('ten'),
    agentId: newId('agt'),
    status: 'completed',
    endReason: 'user_ended',
    endedAt: new Date().toISOString(),
    durationSeconds: 12,
    language: 'en-US',
    messages: [],
    turns: [],
    usage: {
      llm: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 10, outputTokens: 5 },
      tts: { provider: 'elevenlabs', characters: 40 },
      stt: { provider: 'deepgram', audioSeconds: 12 },
      telephony: { provider: 'twilio', seconds: 12 },
    },
    error: null,
    recording: null,
    turnMetrics: [],
  };
}

/** A logger whose lines the test reads. */
function capturedLogger(): { logger: pino.Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let bus: InProcessBus;
const subs: BusSubscription[] = [];
afterEach(async () => {
  await Promise.all(subs.splice(0).map((s) => s.close()));
  await bus?.close();
});

describe('end records', () => {
  it('are retried until a control plane answers, and stay listed as waiting until then', async () => {
    bus = new InProcessBus();
    const { logger, lines } = capturedLogger();
    const delivery = new EndRecordDelivery({ bus, logger, firstRetryMs: 20, maxRetryMs: 40 });
    const rec = record();
    let settled = false;
    const done = delivery.deliver(rec).then(() => void (settled = true));
    // No control plane yet (all restarting): nobody answers.
    await sleep(150);
    expect(settled).toBe(false);
    expect([...delivery.conversationIds]).toEqual([rec.conversationId]);
    const stored: Payload<'sessionEnded'>[] = [];
    subs.push(bus.respond('callEnd', async (r) => (stored.push(r), { ok: true })));
    await done;
    expect(stored.map((r) => r.conversationId)).toEqual([rec.conversationId]);
    expect(delivery.size).toBe(0);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['end record not stored by a control plane yet; retrying until one does']);
    expect(lines.some((l) => l.level === 30 && l.msg === 'end record stored by a control plane after retries')).toBe(true);
  });

  it('are sent again when the control plane failed to store them (its database was down)', async () => {
    bus = new InProcessBus();
    const { logger } = capturedLogger();
    const delivery = new EndRecordDelivery({ bus, logger, firstRetryMs: 10 });
    let attempts = 0;
    subs.push(
      bus.respond('callEnd', async () => {
        attempts += 1;
        if (attempts < 3) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        return { ok: true };
      }),
    );
    await delivery.deliver(record());
    expect(attempts).toBe(3);
    expect(delivery.size).toBe(0);
  });

  it('are given up after giveUpAfterMs, with an error that says what is lost', async () => {
    bus = new InProcessBus();
    const { logger, lines } = capturedLogger();
    const delivery = new EndRecordDelivery({ bus, logger, firstRetryMs: 20, giveUpAfterMs: 200 });
    const startedAt = performance.now();
    await delivery.deliver(record());
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(195);
    expect(delivery.size).toBe(0);
    const errors = lines.filter((l) => l.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toMatch(/given up: the call will be marked failed \(gateway_lost\)/);
  });

  it('beyond maxWaiting get one attempt, so an outage costs the gateway bounded memory', async () => {
    bus = new InProcessBus();
    const { logger, lines } = capturedLogger();
    const delivery = new EndRecordDelivery({ bus, logger, firstRetryMs: 10_000, maxWaiting: 2 });
    const kept = [delivery.deliver(record()), delivery.deliver(record())];
    await delivery.deliver(record());
    expect(delivery.size).toBe(2);
    const errors = lines.filter((l) => l.level === 50) as unknown as { tooManyWaiting: boolean }[];
    expect(errors).toHaveLength(1);
    expect(errors[0]!.tooManyWaiting).toBe(true);
    subs.push(bus.respond('callEnd', async () => ({ ok: true })));
    await delivery.close(1000);
    await Promise.all(kept);
    expect(delivery.size).toBe(0);
  });

  it('get the close grace and no more when the gateway shuts down, and a record delivered meanwhile is still tried', async () => {
    bus = new InProcessBus();
    const { logger, lines } = capturedLogger();
    const delivery = new EndRecordDelivery({ bus, logger, firstRetryMs: 5000 });
    const waiting = delivery.deliver(record());
    await sleep(20);
    const startedAt = performance.now();
    const closed = delivery.close(300);
    // A call ended by the shutdown itself: its record gets the same grace.
    const late = delivery.deliver(record());
    await Promise.all([closed, waiting, late]);
    const took = performance.now() - startedAt;
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(2000);
    expect(lines.filter((l) => l.level === 50)).toHaveLength(2);
  });

  it('close wakes a waiting record at once, so one a control plane can now store is not held for its backoff', async () => {
    bus = new InProcessBus();
    const { logger } = capturedLogger();
    const delivery = new EndRecordDelivery({ bus, logger, firstRetryMs: 60_000 });
    const waiting = delivery.deliver(record());
    await sleep(20);
    subs.push(bus.respond('callEnd', async () => ({ ok: true })));
    const startedAt = performance.now();
    await delivery.close(5000);
    await waiting;
    expect(performance.now() - startedAt).toBeLessThan(1000);
  });
});
