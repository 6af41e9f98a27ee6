import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Plan } from '../src/db/schema/tenants.js';
import { createTenant, createTestApp, isolatedDatabase } from './helpers.js';
import type { TestApp, TestTenant } from './helpers.js';

/** A client address of its own per test, so login throttles of parallel test files never meet. */
export function freshIp(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]}`;
}

/** `app.inject` a JSON POST from a given client address (and bearer token, if any). */
export function postFrom(app: FastifyInstance, ip: string, url: string, body: unknown, bearer?: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url,
    remoteAddress: ip,
    headers: { 'content-type': 'application/json', 'user-agent': 'session-tests', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    payload: JSON.stringify(body),
  });
}

export interface Tokens {
  accessToken: string;
  refreshToken: string;
}

/** Logs in (asserting 200 and a token response) and returns the pair. */
export async function loginOk(app: FastifyInstance, ip: string, user: { email: string; password: string }): Promise<Tokens> {
  const res = await postFrom(app, ip, '/api/v1/auth/login', { email: user.email, password: user.password });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Tokens>();
}

/** The decoded (unverified) header and payload of a JWT. */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [h, p] = token.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')), payload: JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')) };
}

/** A movable clock for the app (rate limits, throttle, token times). */
export function movableClock(startMs = Date.now()): { now: () => number; advance(ms: number): void } {
  let t = startMs;
  return { now: () => t, advance: (ms) => (t += ms) };
}

/** A session test file's world: its own database, an app on a movable clock, and a tenant. */
export interface SessionWorld {
  clock: ReturnType<typeof movableClock>;
  /** Set in beforeAll. */
  t: TestApp;
  /** Set in beforeAll. */
  tenant: TestTenant;
}

/**
 * Registers beforeAll/afterAll building (and dropping) the world; `t` and `tenant` are there
 * once beforeAll has run. A database of its own: these files move their clock days ahead, and the
 * rows written at those times (signing keys, rate-limit windows, throttles) must not meet other
 * files' apps.
 */
export function sessionWorld(opts: { plan?: Plan } = {}): SessionWorld {
  const w = { clock: movableClock() } as SessionWorld;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const iso = await isolatedDatabase();
    drop = iso.drop;
    w.t = await createTestApp({ now: w.clock.now, database: iso.database });
    w.tenant = await createTenant(w.t.database, opts);
  });
  afterAll(async () => {
    await w.t?.close();
    await drop?.();
  });
  return w;
}
