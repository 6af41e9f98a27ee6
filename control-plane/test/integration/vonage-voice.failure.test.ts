import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signVonageWebhook } from '@vap/shared';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { createTestApp } from '../helpers.js';
import type { TestApp } from '../helpers.js';

const SECRET = 'vonage-failure-test-secret-0000000';

// Nothing listens on port 1: every query fails at once with ECONNREFUSED.
let broken: Database;
let t: TestApp;

beforeAll(async () => {
  broken = openDatabase('postgres://postgres@127.0.0.1:1/unreachable', 1);
  t = await createTestApp({ env: { VONAGE_SIGNATURE_SECRET: SECRET, MEDIA_GATEWAY_PUBLIC_URL: 'wss://gw.example.com' }, database: broken });
});
afterAll(async () => {
  await t.close();
  await broken.close();
});

function post(path: string, body: Record<string, string>, secret = SECRET): Promise<LightMyRequestResponse> {
  const raw = JSON.stringify(body);
  return t.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', authorization: `Bearer ${signVonageWebhook({ secret, rawBody: raw })}` }, payload: raw });
}

const answer = () => ({ to: '442079460000', from: '447700900000', uuid: randomUUID(), conversation_uuid: `CON-${randomUUID()}` });

describe('Vonage webhooks with the database down', () => {
  it('answer: 200 with the apology NCCO, never a 5xx, on both addresses (the /api/v1 rate limiter fails first)', async () => {
    for (const path of ['/webhooks/vonage/voice/answer', '/api/v1/webhooks/vonage/voice/answer']) {
      const res = await post(path, answer());
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual([{ action: 'talk', text: APOLOGY_TEXT }]);
    }
  });

  it('answer: still checks the signature first', async () => {
    expect((await post('/webhooks/vonage/voice/answer', answer(), 'another-secret')).statusCode).toBe(403);
  });

  it('event: 204, the status logged without its conversation (a 5xx would only bring the same event back)', async () => {
    const res = await post('/webhooks/vonage/voice/event', { uuid: randomUUID(), status: 'completed', direction: 'inbound' });
    expect(res.statusCode).toBe(204);
  });
});
