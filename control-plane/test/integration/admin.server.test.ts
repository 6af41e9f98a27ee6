import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { InProcessBus, computeTwilioSignature } from '@vap/shared';
import { loadConfig } from '../../src/config.js';
import { startControlPlane } from '../../src/control-plane.js';
import { SANDBOX_PHONE_NUMBER } from '../../src/modules/telephony/sandbox-receptionist.js';
import { freshDatabases, voiceParams } from '../telephony-fixtures.js';

const logger = pino({ level: 'silent' });
const databases = freshDatabases('vap_admin');
const dirs: string[] = [];
afterAll(async () => {
  await databases.dropAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'vap-admin-'));
  dirs.push(d);
  return d;
}

function config(databaseUrl: string, dir: string, extra: Record<string, string> = {}) {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dir,
    PORT: '0',
    ADMIN_PORT: '0',
    PUBLIC_URL: 'https://voice.example.com',
    LOG_LEVEL: 'silent',
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    ...extra,
  });
}

const inspect = (adminUrl: string, token: string | null) =>
  fetch(`${adminUrl}/api/v1/telephony/debug/calls/CAnothing`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

describe('admin server started with the control plane', () => {
  it('in development generates the admin and Twilio sandbox tokens into DATA_DIR, serves both APIs and reuses the tokens on restart', async () => {
    const url = await databases.create();
    const dir = dataDir();
    const cp = await startControlPlane(config(url, dir), { bus: new InProcessBus(), logger });
    let adminToken: string;
    let adminUrl: string;
    try {
      expect(cp.admin).not.toBeNull();
      adminUrl = cp.admin!.url;
      expect(cp.admin!.tokenSource).toBe(path.join(dir, 'admin-token'));
      expect(statSync(path.join(dir, 'admin-token')).mode & 0o777).toBe(0o600);
      adminToken = readFileSync(path.join(dir, 'admin-token'), 'utf8').trim();
      expect(adminToken.length).toBeGreaterThanOrEqual(32);

      expect((await inspect(adminUrl, null)).status).toBe(401);
      const found = await inspect(adminUrl, adminToken);
      expect(found.status).toBe(404);
      expect(await found.json()).toEqual({ callSid: 'CAnothing', message: expect.any(String) });

      // Sandbox mode: a call signed with the token in DATA_DIR reaches the sandbox receptionist, over real HTTP.
      expect(cp.twilio).toMatchObject({ sandbox: true, file: path.join(dir, 'twilio-sandbox-token') });
      const sandboxToken = readFileSync(path.join(dir, 'twilio-sandbox-token'), 'utf8').trim();
      expect(cp.twilio.token).toBe(sandboxToken);
      const params = voiceParams(SANDBOX_PHONE_NUMBER);
      const res = await fetch(`${cp.url}/webhooks/twilio/voice`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': computeTwilioSignature(sandboxToken, 'https://voice.example.com/webhooks/twilio/voice', params) },
        body: new URLSearchParams(params).toString(),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain(`<Parameter name="agentId" value="${cp.bootstrap!.sandbox!.agentId}"/>`);
    } finally {
      await cp.close();
    }
    await expect(inspect(adminUrl, adminToken)).rejects.toThrow();

    const again = await startControlPlane(config(url, dir), { bus: new InProcessBus(), logger });
    try {
      expect(again.twilio.token).toBe(cp.twilio.token);
      expect((await inspect(again.admin!.url, adminToken)).status).toBe(404);
    } finally {
      await again.close();
    }
  });

  it('uses ADMIN_TOKEN and TWILIO_AUTH_TOKEN when set, writing no token files', async () => {
    const url = await databases.create();
    const dir = dataDir();
    const token = randomBytes(24).toString('hex');
    const cp = await startControlPlane(config(url, dir, { ADMIN_TOKEN: token, TWILIO_AUTH_TOKEN: 'configured-twilio-token' }), { bus: new InProcessBus(), logger });
    try {
      expect(cp.admin!.tokenSource).toBe('ADMIN_TOKEN');
      expect(cp.twilio).toEqual({ token: 'configured-twilio-token', sandbox: false });
      expect((await inspect(cp.admin!.url, token)).status).toBe(404);
      expect(existsSync(path.join(dir, 'admin-token'))).toBe(false);
      expect(existsSync(path.join(dir, 'twilio-sandbox-token'))).toBe(false);
    } finally {
      await cp.close();
    }
  });

  it('does not start the admin server in production without ADMIN_TOKEN', async () => {
    const url = await databases.create();
    const dir = dataDir();
    const cp = await startControlPlane(config(url, dir, { APP_ENV: 'production', TWILIO_AUTH_TOKEN: 'configured-twilio-token' }), { bus: new InProcessBus(), logger });
    try {
      expect(cp.admin).toBeNull();
      expect(existsSync(path.join(dir, 'admin-token'))).toBe(false);
    } finally {
      await cp.close();
    }
  });
});
