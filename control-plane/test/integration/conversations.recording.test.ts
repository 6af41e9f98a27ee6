import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, LocalObjectStore, S3ObjectStore, spareLoopbackPort } from '@vap/shared';
import type { ObjectStore } from '@vap/shared';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { RecordingRetention } from '../../src/modules/conversations/recording-retention.js';
import { Housekeeping } from '../../src/modules/housekeeping/housekeeping.js';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency-store.js';
import { RateLimiter } from '../../src/modules/rate-limit/rate-limiter.js';
import { SecretBox } from '../../src/secret-box.js';
import { startS3rver } from '../../../shared/test/start-s3rver.js';
import type { TestS3rver } from '../../../shared/test/start-s3rver.js';
import { TEST_SECRET_KEY, call, createTenant, isolatedDatabase, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest, startCalls } from './calls.fixtures.js';

const silent = pino({ level: 'silent' });

/**
 * An app listening on loopback with its own database (retention claims rows of every
 * tenant, so it must not see other files' data), a recording store, a movable clock and
 * call handling; two tenants with an active agent each.
 */
interface World {
  app: FastifyInstance;
  url: string;
  database: Database;
  bus: InProcessBus;
  calls: CallHandling;
  store: ObjectStore;
  clock: { nowMs: number | null };
  tenant: TestTenant;
  other: TestTenant;
  agentId: string;
  close(): Promise<void>;
}

async function world(store: ObjectStore): Promise<World> {
  const iso = await isolatedDatabase();
  const port = await spareLoopbackPort();
  const clock: { nowMs: number | null } = { nowMs: null };
  const bus = new InProcessBus();
  const config = testConfig({ PUBLIC_URL: `http://127.0.0.1:${port}` });
  const app = await buildApp(config, {
    database: iso.database,
    bus,
    secrets: new SecretBox(TEST_SECRET_KEY),
    secretKey: TEST_SECRET_KEY,
    logger: silent,
    recordings: store,
    now: () => clock.nowMs ?? Date.now(),
  });
  await app.listen({ host: '127.0.0.1', port });
  const tenant = await createTenant(iso.database);
  const other = await createTenant(iso.database);
  const agent = await activeAgent(app, tenant.key);
  const calls = startCalls(iso.database.db, bus);
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    database: iso.database,
    bus,
    calls,
    store,
    clock,
    tenant,
    other,
    agentId: agent.id,
    close: async () => {
      await calls.close();
      await app.close();
      await iso.drop();
    },
  };
}

/** An ended call whose gateway stored `bytes` as its recording; `endedAt` dates it (retention counts from there). */
async function recordedCall(w: World, bytes: Uint8Array, opts: { retentionDays?: number; endedAt?: Date; format?: 'mp3' | 'wav' } = {}) {
  const { conversationId } = await prepareCall(w.bus, prepareRequest(w.tenant.tenantId, w.agentId));
  const format = opts.format ?? 'mp3';
  const key = `${w.tenant.tenantId}/${conversationId}.${format}`;
  await w.store.put(key, bytes, format === 'mp3' ? 'audio/mpeg' : 'audio/wav');
  const endedAt = opts.endedAt ?? new Date();
  await w.calls.calls.end(
    endedRecord(w.tenant.tenantId, w.agentId, conversationId, [message(0), message(1)], {
      endedAt: endedAt.toISOString(),
      recording: { key, format, channels: 2, durationSeconds: 94.6, sizeBytes: bytes.byteLength, retentionDays: opts.retentionDays ?? 30 },
    }),
  );
  return { conversationId, key };
}

/** The problem document of a fetch answer. */
async function problemOf(res: Response): Promise<{ type: string; detail: string; errors?: { field: string; message: string }[] }> {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  return (await res.json()) as { type: string; detail: string };
}

const audio = (n = 48_000) => new Uint8Array(randomBytes(n));

function getLink(w: World, key: string, conversationId: string) {
  return call(w.app, key, 'GET', `/api/v1/conversations/${conversationId}/recording`);
}

describe('recordings in the local store', () => {
  let w: World;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vap-recordings-'));
    w = await world(new LocalObjectStore(dir));
  });
  afterAll(async () => {
    await w?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a signed link valid one hour that serves the recording’s bytes over HTTP', async () => {
    const bytes = audio();
    const { conversationId } = await recordedCall(w, bytes);
    const before = Date.now();
    const res = await getLink(w, w.tenant.key, conversationId);
    expect(res.statusCode, res.body).toBe(200);
    const link = res.json();
    expect(link).toEqual({ url: expect.any(String), format: 'mp3', durationSeconds: 95, expiresAt: expect.any(String) });
    const expiresMs = Date.parse(link.expiresAt);
    expect(expiresMs).toBeGreaterThan(before + 3599_000 - 1000);
    expect(expiresMs).toBeLessThanOrEqual(Date.now() + 3600_000);
    const url = new URL(link.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${w.url}/recordings/${conversationId}.mp3`);
    expect(url.searchParams.get('expires')).toBe(String(expiresMs / 1000));

    const file = await fetch(link.url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('audio/mpeg');
    expect(file.headers.get('content-length')).toBe(String(bytes.byteLength));
    expect(file.headers.get('cache-control')).toMatch(/^private, max-age=(359\d|3600)$/);
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytes);

    const head = await fetch(link.url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(bytes.byteLength));
    expect((await head.arrayBuffer()).byteLength).toBe(0);

    // A player seeking: one byte range.
    const part = await fetch(link.url, { headers: { range: 'bytes=1000-1999' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${bytes.byteLength}`);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(1000, 2000));
  });

  it('serves a wav recording as audio/wav', async () => {
    const bytes = audio(1000);
    const { conversationId } = await recordedCall(w, bytes, { format: 'wav' });
    const link = (await getLink(w, w.tenant.key, conversationId)).json();
    expect(link.format).toBe('wav');
    const file = await fetch(link.url);
    expect(file.headers.get('content-type')).toBe('audio/wav');
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytes);
  });

  it('refuses a link whose signature, expiry or file name was changed (403)', async () => {
    const { conversationId } = await recordedCall(w, audio(100));
    const link = new URL((await getLink(w, w.tenant.key, conversationId)).json().url);
    const sig = link.searchParams.get('sig')!;
    const variants: URL[] = [];
    const tampered = new URL(link);
    tampered.searchParams.set('sig', `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`);
    variants.push(tampered);
    // The last of 43 base64url characters carries 2 unused bits: this one decodes to the same bytes, and is still refused.
    const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const lastChar = new URL(link);
    lastChar.searchParams.set('sig', `${sig.slice(0, -1)}${B64URL[B64URL.indexOf(sig[42]!) ^ 1]}`);
    expect(Buffer.from(lastChar.searchParams.get('sig')!, 'base64url')).toEqual(Buffer.from(sig, 'base64url'));
    variants.push(lastChar);
    const longer = new URL(link);
    longer.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 3600));
    variants.push(longer);
    const { conversationId: otherCall } = await recordedCall(w, audio(100));
    variants.push(new URL(link.toString().replace(conversationId, otherCall)));
    for (const v of variants) {
      const res = await fetch(v);
      expect(res.status, v.toString()).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect((await problemOf(res)).type).toMatch(/\/errors\/recording-link-invalid$/);
    }
    expect((await fetch(link)).status).toBe(200);
  });

  it('names the bad field of a malformed link', async () => {
    const { conversationId } = await recordedCall(w, audio(100));
    const link = new URL((await getLink(w, w.tenant.key, conversationId)).json().url);
    const noSig = new URL(link);
    noSig.searchParams.delete('sig');
    const res = await fetch(noSig);
    expect(res.status).toBe(400);
    expect((await problemOf(res)).errors).toEqual([expect.objectContaining({ field: 'sig' })]);
    const badExpires = new URL(link);
    badExpires.searchParams.set('expires', 'soon');
    const res2 = await fetch(badExpires);
    expect(res2.status).toBe(422);
    expect((await problemOf(res2)).errors).toEqual([expect.objectContaining({ field: 'expires' })]);
  });

  it('stops working after its expiry (403), and a new link works again', async () => {
    const bytes = audio(500);
    const { conversationId } = await recordedCall(w, bytes);
    const issuedAt = Date.now();
    w.clock.nowMs = issuedAt;
    try {
      const link = (await getLink(w, w.tenant.key, conversationId)).json();
      const expiresMs = Date.parse(link.expiresAt);
      w.clock.nowMs = expiresMs - 1;
      expect((await fetch(link.url)).status).toBe(200);
      w.clock.nowMs = expiresMs;
      const late = await fetch(link.url);
      expect(late.status).toBe(403);
      const problem = await problemOf(late);
      expect(problem.type).toMatch(/\/errors\/recording-link-invalid$/);
      expect(problem.detail).toContain('expired');
      const fresh = (await getLink(w, w.tenant.key, conversationId)).json();
      expect(Date.parse(fresh.expiresAt)).toBe(expiresMs + 3600_000);
      expect(new Uint8Array(await (await fetch(fresh.url)).arrayBuffer())).toEqual(bytes);
    } finally {
      w.clock.nowMs = null;
    }
  });

  it('is 404 conversation-not-found for another tenant’s or an unknown conversation', async () => {
    const { conversationId } = await recordedCall(w, audio(100));
    for (const [key, id] of [
      [w.other.key, conversationId],
      [w.tenant.key, 'conv_00000000000000000000000000'],
    ] as const) {
      const res = await getLink(w, key, id);
      expect(res.statusCode).toBe(404);
      expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
    }
  });

  it('is 404 recording-not-found for a call without a recording, and 409 while the call is in progress', async () => {
    const { conversationId: live } = await prepareCall(w.bus, prepareRequest(w.tenant.tenantId, w.agentId));
    const inProgress = await getLink(w, w.tenant.key, live);
    expect(inProgress.statusCode).toBe(409);
    expect(inProgress.json().type).toMatch(/\/errors\/invalid-state$/);
    await w.calls.calls.end(endedRecord(w.tenant.tenantId, w.agentId, live, [message(0)]));
    const none = await getLink(w, w.tenant.key, live);
    expect(none.statusCode).toBe(404);
    expect(none.json().type).toMatch(/\/errors\/recording-not-found$/);
  });

  it('is 404 recording-not-found when the object is missing from the store, for the API and an issued link', async () => {
    const { conversationId, key } = await recordedCall(w, audio(100));
    const link = (await getLink(w, w.tenant.key, conversationId)).json();
    await w.store.delete(key);
    expect((await getLink(w, w.tenant.key, conversationId)).json().type).toMatch(/recording-not-found$/);
    const res = await fetch(link.url);
    expect(res.status).toBe(404);
    expect((await problemOf(res)).type).toMatch(/recording-not-found$/);
  });

  it('stops an issued link once the conversation is deleted, and the object is gone from the store', async () => {
    const { conversationId, key } = await recordedCall(w, audio(100));
    const link = (await getLink(w, w.tenant.key, conversationId)).json();
    expect((await call(w.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${conversationId}`)).statusCode).toBe(204);
    expect(await w.store.exists(key)).toBe(false);
    const res = await fetch(link.url);
    expect(res.status).toBe(404);
    expect((await problemOf(res)).type).toMatch(/\/errors\/recording-not-found$/);
  });

  it('purges recordings past their retention: object deleted, recording unavailable, links 404', async () => {
    const endedAt = new Date(Date.UTC(2026, 2, 1, 9, 0, 0));
    const due = await recordedCall(w, audio(200), { retentionDays: 7, endedAt });
    const later = await recordedCall(w, audio(200), { retentionDays: 8, endedAt });
    const link = (await getLink(w, w.tenant.key, due.conversationId)).json();
    expect((await fetch(link.url)).status).toBe(200);
    const retention = new RecordingRetention({ db: w.database.db, store: w.store, log: silent });
    const dueAt = new Date(endedAt.getTime() + 7 * 86_400_000);

    expect(await retention.purge(new Date(dueAt.getTime() - 1))).toEqual({ purged: 0, failed: 0 });
    expect(await w.store.exists(due.key)).toBe(true);

    expect(await retention.purge(dueAt)).toEqual({ purged: 1, failed: 0 });
    expect(await w.store.exists(due.key)).toBe(false);
    expect(await w.store.exists(later.key)).toBe(true);
    const conv = (await call(w.app, w.tenant.key, 'GET', `/api/v1/conversations/${due.conversationId}`)).json();
    expect(conv.recording).toMatchObject({ available: false, format: 'mp3' });
    const { rows } = await w.database.pool.query('select recording_key, recording from conversations where id = $1', [due.conversationId]);
    expect(rows[0]).toMatchObject({ recording_key: null, recording: { available: false, deletedAt: dueAt.toISOString(), expiresAt: dueAt.toISOString() } });
    const api = await getLink(w, w.tenant.key, due.conversationId);
    expect(api.statusCode).toBe(404);
    expect(api.json().type).toMatch(/\/errors\/recording-not-found$/);
    const res = await fetch(link.url);
    expect(res.status).toBe(404);
    expect((await problemOf(res)).type).toMatch(/\/errors\/recording-not-found$/);

    // Idempotent: nothing more is due at the same time.
    expect(await retention.purge(dueAt)).toEqual({ purged: 0, failed: 0 });
    expect((await getLink(w, w.tenant.key, later.conversationId)).statusCode).toBe(200);
  });

  it('purges each due recording exactly once when several replicas run at the same time', async () => {
    const endedAt = new Date(Date.UTC(2026, 3, 1, 9, 0, 0));
    const dueAt = new Date(endedAt.getTime() + 86_400_000);
    // Other tests' recordings that are due by then go first, so only these 12 are counted.
    await new RecordingRetention({ db: w.database.db, store: w.store, log: silent }).purge(dueAt);
    const seeded = [];
    for (let i = 0; i < 12; i++) seeded.push(await recordedCall(w, audio(50), { retentionDays: 1, endedAt }));
    const replicas = [0, 1, 2].map(() => new RecordingRetention({ db: w.database.db, store: w.store, log: silent, batchSize: 3 }));
    const results = await Promise.all(replicas.map((r) => r.purge(dueAt)));
    expect(results.reduce((n, r) => n + r.purged, 0)).toBe(12);
    expect(results.every((r) => r.failed === 0)).toBe(true);
    for (const s of seeded) expect(await w.store.exists(s.key)).toBe(false);
    const { rows } = await w.database.pool.query<{ n: string }>(
      `select count(*) as n from conversations where id = any($1) and recording_key is null and recording->>'available' = 'false'`,
      [seeded.map((s) => s.conversationId)],
    );
    expect(Number(rows[0]!.n)).toBe(12);
  });

  it('leaves a recording due when the store cannot delete it, and purges it on a later run', async () => {
    const endedAt = new Date(Date.UTC(2026, 4, 1, 9, 0, 0));
    const a = await recordedCall(w, audio(50), { retentionDays: 2, endedAt });
    const b = await recordedCall(w, audio(50), { retentionDays: 2, endedAt });
    const dueAt = new Date(endedAt.getTime() + 2 * 86_400_000);
    const local = w.store as LocalObjectStore;
    // The real store, except that deleting `a` fails (a store outage for that object).
    const flaky: ObjectStore = {
      kind: 'local',
      put: (k, body, type) => local.put(k, body, type),
      putFile: (k, file, type) => local.putFile(k, file, type),
      get: (k) => local.get(k),
      getToFile: (k, file) => local.getToFile(k, file),
      exists: (k) => local.exists(k),
      delete: async (k) => {
        if (k === a.key) throw new Error('store unavailable');
        await local.delete(k);
      },
    };
    expect(await new RecordingRetention({ db: w.database.db, store: flaky, log: silent }).purge(dueAt)).toEqual({ purged: 1, failed: 1 });
    expect(await local.exists(a.key)).toBe(true);
    expect(await local.exists(b.key)).toBe(false);
    expect((await getLink(w, w.tenant.key, a.conversationId)).statusCode).toBe(200);

    expect(await new RecordingRetention({ db: w.database.db, store: local, log: silent }).purge(dueAt)).toEqual({ purged: 1, failed: 0 });
    expect(await local.exists(a.key)).toBe(false);
  });

  it('runs from Housekeeping and counts what it purged', async () => {
    const endedAt = new Date(Date.UTC(2026, 5, 1, 9, 0, 0));
    const { key } = await recordedCall(w, audio(50), { retentionDays: 1, endedAt });
    const nowMs = endedAt.getTime() + 86_400_000;
    const hk = new Housekeeping({
      idempotency: new IdempotencyStore(w.database.pool),
      rateLimiter: new RateLimiter(w.database.pool, () => nowMs),
      recordingRetention: new RecordingRetention({ db: w.database.db, store: w.store, log: silent }),
      log: silent,
      intervalMs: 60_000,
      now: () => nowMs,
    });
    const result = await hk.runOnce();
    await hk.stop();
    expect(result.recordings).toBe(1);
    expect(await w.store.exists(key)).toBe(false);
  });
});

describe('recordings in an S3-compatible store (s3rver)', () => {
  let w: World;
  let s3: TestS3rver;
  let store: S3ObjectStore;
  beforeAll(async () => {
    s3 = await startS3rver();
    store = new S3ObjectStore(s3.config);
    w = await world(store);
  });
  afterAll(async () => {
    await w?.close();
    await store?.close();
    await s3?.close();
  });

  it('answers a pre-signed GetObject link valid one hour that serves the bytes', async () => {
    const bytes = audio();
    const { conversationId, key } = await recordedCall(w, bytes);
    const res = await getLink(w, w.tenant.key, conversationId);
    expect(res.statusCode, res.body).toBe(200);
    const link = res.json();
    expect(link).toMatchObject({ format: 'mp3', durationSeconds: 95 });
    const url = new URL(link.url);
    expect(url.pathname).toBe(`/calls/recordings/${key}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
    // The link's expiry is what S3 will enforce: signing time + 3600 s.
    const signedAt = url.searchParams.get('X-Amz-Date')!.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z');
    expect(Date.parse(link.expiresAt)).toBe(Date.parse(signedAt) + 3600_000);
    const file = await fetch(link.url);
    expect(file.status).toBe(200);
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytes);
  });

  it('issues links that S3 refuses after their expiry', async () => {
    const { conversationId } = await recordedCall(w, audio(100));
    w.clock.nowMs = Date.now() - 3600_000 - 5000;
    try {
      const link = (await getLink(w, w.tenant.key, conversationId)).json();
      expect(Date.parse(link.expiresAt)).toBeLessThan(Date.now());
      const res = await fetch(link.url);
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('Request has expired');
    } finally {
      w.clock.nowMs = null;
    }
  });

  it('purges past retention from the bucket and answers 404 afterwards', async () => {
    const endedAt = new Date(Date.UTC(2026, 2, 1, 9, 0, 0));
    const { conversationId, key } = await recordedCall(w, audio(100), { retentionDays: 3, endedAt });
    expect(await store.exists(key)).toBe(true);
    const result = await new RecordingRetention({ db: w.database.db, store, log: silent }).purge(new Date(endedAt.getTime() + 3 * 86_400_000));
    expect(result).toEqual({ purged: 1, failed: 0 });
    expect(await store.exists(key)).toBe(false);
    const res = await getLink(w, w.tenant.key, conversationId);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/recording-not-found$/);
  });

  it('is 404 conversation-not-found for another tenant', async () => {
    const { conversationId } = await recordedCall(w, audio(100));
    const res = await getLink(w, w.other.key, conversationId);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
  });
});
