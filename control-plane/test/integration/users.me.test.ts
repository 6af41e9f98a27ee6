import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTenant } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { createUsersTestApp, signedIn } from '../users-fixtures.js';

let t: Awaited<ReturnType<typeof createUsersTestApp>>;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createUsersTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

describe('GET /api/v1/users/me', () => {
  it('returns the caller’s profile: the user fields plus time zone and notification preferences', async () => {
    const me = await signedIn(t.app, t.database, tenant.tenantId, 'ReadOnly', { firstName: 'Rita', lastName: 'Reader' });
    const res = await call(t.app, me.token, 'GET', '/api/v1/users/me');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: me.id,
      email: me.email,
      firstName: 'Rita',
      lastName: 'Reader',
      role: 'ReadOnly',
      status: 'active',
      mfaEnabled: false,
      lastLoginAt: expect.any(String),
      createdAt: expect.any(String),
      invitedBy: null,
      permissions: { canManageApiKeys: false, canViewBilling: false, canDeleteConversations: false },
      timezone: 'UTC',
      notificationPreferences: { weeklyDigest: true, billingAlerts: true, agentErrors: true },
    });
  });

  it('is for users: API keys get 403, no credential 401', async () => {
    expect((await call(t.app, tenant.key, 'GET', '/api/v1/users/me')).statusCode).toBe(403);
    expect((await call(t.app, null, 'GET', '/api/v1/users/me')).statusCode).toBe(401);
  });
});

describe('PATCH /api/v1/users/me', () => {
  it('changes names, time zone (stored canonical) and merges notification preferences', async () => {
    const me = await signedIn(t.app, t.database, tenant.tenantId, 'TenantUser');
    const res = await call(t.app, me.token, 'PATCH', '/api/v1/users/me', { firstName: 'Mia', lastName: 'Me', timezone: 'Europe/Paris', notificationPreferences: { weeklyDigest: false } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ firstName: 'Mia', lastName: 'Me', timezone: 'Europe/Paris', notificationPreferences: { weeklyDigest: false, billingAlerts: true, agentErrors: true } });
    const more = await call(t.app, me.token, 'PATCH', '/api/v1/users/me', { timezone: 'america/new_york', notificationPreferences: { agentErrors: false } });
    expect(more.json()).toMatchObject({ firstName: 'Mia', timezone: 'America/New_York', notificationPreferences: { weeklyDigest: false, billingAlerts: true, agentErrors: false } });
    expect((await call(t.app, me.token, 'PATCH', '/api/v1/users/me', { timezone: 'UTC' })).json().timezone).toBe('UTC');
    const { rows } = await t.database.pool.query('select timezone, notification_preferences from users where id = $1', [me.id]);
    expect(rows[0]).toEqual({ timezone: 'UTC', notification_preferences: { weeklyDigest: false, billingAlerts: true, agentErrors: false } });
  });

  it('refuses a time zone that is not an IANA name, naming the field', async () => {
    const me = await signedIn(t.app, t.database, tenant.tenantId, 'ReadOnly');
    for (const timezone of ['Mars/Olympus_Mons', '+01:00', 'GMT+1 ', '', 'Europe/Paris; drop table users']) {
      const res = await call(t.app, me.token, 'PATCH', '/api/v1/users/me', { timezone });
      expect(res.statusCode, timezone).toBe(422);
      expect(res.json().errors).toEqual([{ field: 'timezone', message: 'must be an IANA time zone name such as Europe/Paris' }]);
    }
    expect((await call(t.app, me.token, 'GET', '/api/v1/users/me')).json().timezone).toBe('UTC');
  });

  it('names other bad fields and refuses what the caller may not change about themselves', async () => {
    const me = await signedIn(t.app, t.database, tenant.tenantId, 'ReadOnly');
    const bad = await call(t.app, me.token, 'PATCH', '/api/v1/users/me', { firstName: '', notificationPreferences: { weeklyDigest: 'no', sms: true } });
    expect(bad.statusCode).toBe(422);
    const fields = bad.json().errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['firstName', 'notificationPreferences.weeklyDigest']));
    expect(JSON.stringify(bad.json().errors)).toContain('sms');
    const role = await call(t.app, me.token, 'PATCH', '/api/v1/users/me', { role: 'Admin' });
    expect(role.statusCode).toBe(422);
    expect((await call(t.app, me.token, 'GET', '/api/v1/users/me')).json().role).toBe('ReadOnly');
    expect((await call(t.app, me.token, 'PATCH', '/api/v1/users/me', {})).statusCode).toBe(422);
  });
});
