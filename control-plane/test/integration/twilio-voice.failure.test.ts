import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { createTestApp } from '../helpers.js';
import type { TestApp } from '../helpers.js';
import { TELEPHONY_ENV, postTwilio, randomE164, voiceParams } from '../telephony-fixtures.js';
import { child, parseXml } from '../xml.js';

// Nothing listens on port 1: every query fails at once with ECONNREFUSED.
let broken: Database;
let t: TestApp;

beforeAll(async () => {
  broken = openDatabase('postgres://postgres@127.0.0.1:1/unreachable', 1);
  t = await createTestApp({ env: { ...TELEPHONY_ENV }, database: broken });
});
afterAll(async () => {
  await t.close();
  await broken.close();
});

function expectApology(res: { statusCode: number; headers: Record<string, unknown>; body: string }): void {
  expect(res.statusCode).toBe(200);
  expect(String(res.headers['content-type'])).toMatch(/^text\/xml/);
  const response = parseXml(res.body);
  expect(response.children.map((c) => c.name)).toEqual(['Say', 'Hangup']);
  expect(child(response, 'Say').text).toBe(APOLOGY_TEXT);
}

describe('POST /webhooks/twilio/voice with the database down', () => {
  it('answers 200 with the apology, never a 5xx', async () => {
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(randomE164())));
  });

  it('answers the apology on the /api/v1 alias too, where the rate limiter is the first to fail', async () => {
    expectApology(await postTwilio(t.app, '/api/v1/webhooks/twilio/voice', voiceParams(randomE164())));
  });

  it('still checks the signature first: an unsigned request gets no TwiML', async () => {
    const res = await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(randomE164()), { signature: null });
    expect(res.statusCode).toBe(403);
  });

  it('answers the apology with a closed pool as well', async () => {
    const closed = openDatabase(broken.pool.options.connectionString!, 1);
    await closed.close();
    const app = await createTestApp({ env: { ...TELEPHONY_ENV }, database: closed });
    try {
      expectApology(await postTwilio(app.app, '/webhooks/twilio/voice', voiceParams(randomE164())));
    } finally {
      await app.close();
    }
  });
});

describe('POST /webhooks/twilio/status with the database down', () => {
  it('answers 204 as before: the event is logged, not stored (a 5xx would only bring the same callback back)', async () => {
    const params = { ...voiceParams(randomE164()), CallStatus: 'completed', CallDuration: '12', Timestamp: 'Wed, 25 Nov 2026 20:40:00 +0000' };
    const res = await postTwilio(t.app, '/webhooks/twilio/status', params);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
  });
});
