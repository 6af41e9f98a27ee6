import { randomBytes, randomInt } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { computeTwilioSignature, newId } from '@vap/shared';
import type { Database } from '../src/db/database.js';
import { PhoneNumberRepository } from '../src/modules/telephony/phone-number-repository.js';
import { call, createAgentFor } from './helpers.js';

/** Environment of the telephony tests: a public URL unlike the address requests arrive on. */
export const TELEPHONY_ENV = {
  PUBLIC_URL: 'https://voice.example.com',
  TWILIO_AUTH_TOKEN: 'test_auth_token_0000000000000000',
  MEDIA_GATEWAY_PUBLIC_URL: 'wss://gw.example.com',
} as const;

/** A number no other test file uses (555 range, random). */
export function randomE164(): string {
  return `+1555${String(randomInt(0, 10_000_000)).padStart(7, '0')}`;
}

export function randomCallSid(): string {
  return `CA${randomBytes(16).toString('hex')}`;
}

/** An agent of the tenant (activated unless `status` says otherwise) and a Twilio number assigned to it. */
export async function agentWithNumber(
  app: FastifyInstance,
  database: Database,
  tenant: { tenantId: string; key: string },
  opts: { status?: 'active' | 'draft' | 'inactive'; assign?: boolean; provider?: 'twilio' | 'telnyx' | 'vonage' } = {},
): Promise<{ agentId: string; phoneNumber: string; numberId: string }> {
  const agent = (await createAgentFor(app, tenant.key)) as { id: string };
  const status = opts.status ?? 'active';
  if (status !== 'draft') expect((await call(app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`)).statusCode).toBe(200);
  if (status === 'inactive') expect((await call(app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/deactivate`)).statusCode).toBe(200);
  const phoneNumber = randomE164();
  const row = await new PhoneNumberRepository(database.db).insert({
    id: newId('num'),
    tenantId: tenant.tenantId,
    phoneNumber,
    country: 'US',
    provider: opts.provider ?? 'twilio',
    assignedAgentId: opts.assign === false ? null : agent.id,
  });
  return { agentId: agent.id, phoneNumber, numberId: row.id };
}

/** Twilio's inbound-call parameters (reference §4.1) for a call to `to`. */
export function voiceParams(to: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    AccountSid: 'AC00000000000000000000000000000001',
    ApiVersion: '2010-04-01',
    CallSid: randomCallSid(),
    CallStatus: 'ringing',
    Direction: 'inbound',
    From: '+15551230001',
    To: to,
    ...overrides,
  };
}

/**
 * POSTs a form to `path` the way Twilio does, signed over `signedUrl` (default: the public
 * URL + path) with `token`; `signature: null` sends no header.
 */
export function postTwilio(
  app: FastifyInstance,
  path: string,
  params: Record<string, string>,
  opts: { token?: string; signedUrl?: string; signature?: string | null; host?: string } = {},
): Promise<LightMyRequestResponse> {
  const url = opts.signedUrl ?? `${TELEPHONY_ENV.PUBLIC_URL}${path}`;
  const signature = opts.signature === undefined ? computeTwilioSignature(opts.token ?? TELEPHONY_ENV.TWILIO_AUTH_TOKEN, url, params) : opts.signature;
  return app.inject({
    method: 'POST',
    url: path,
    headers: {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      host: opts.host ?? 'control-plane.internal:3000',
      ...(signature !== null ? { 'x-twilio-signature': signature } : {}),
    },
    payload: new URLSearchParams(params).toString(),
  });
}

/** Empty databases on the test server, for first-start tests; `dropAll` in afterAll. */
export function freshDatabases(prefix: string): { create(): Promise<string>; dropAll(): Promise<void> } {
  const created: string[] = [];
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: inject('databaseUrl') });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  return {
    create: async () => {
      const name = `${prefix}_${Date.now()}_${randomBytes(3).toString('hex')}`;
      await admin((c) => c.query(`create database ${name}`));
      created.push(name);
      const u = new URL(inject('databaseUrl'));
      u.pathname = `/${name}`;
      return u.toString();
    },
    dropAll: () =>
      admin(async (c) => {
        for (const name of created) await c.query(`drop database if exists ${name} with (force)`);
      }),
  };
}
