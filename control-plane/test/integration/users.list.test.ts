import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { call, createTenant } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { createUsersTestApp, insertUser, signedIn, tokenFromMail } from '../users-fixtures.js';
import type { TestUser } from '../users-fixtures.js';

let t: Awaited<ReturnType<typeof createUsersTestApp>>;
let tenant: TestTenant;
let admin: TestUser & { token: string };
let people: Record<string, TestUser>;

const ids = (res: { json(): { data: Array<{ id: string }> } }) => res.json().data.map((u) => u.id);

beforeAll(async () => {
  t = await createUsersTestApp();
  tenant = await createTenant(t.database);
  admin = await signedIn(t.app, t.database, tenant.tenantId, 'Admin', { email: `zed-admin-${tenant.tenantId}@example.test`, firstName: 'Zed', lastName: 'Admin' });
  people = {
    ada: await insertUser(t.database, tenant.tenantId, { role: 'TenantUser', email: `ada.lovelace-${tenant.tenantId}@example.test`, firstName: 'Ada', lastName: 'Lovelace' }),
    alan: await insertUser(t.database, tenant.tenantId, { role: 'ReadOnly', email: `turing-${tenant.tenantId}@example.test`, firstName: 'Alan', lastName: 'Turing' }),
    grace: await insertUser(t.database, tenant.tenantId, { role: 'TenantUser', email: `gh-${tenant.tenantId}@example.test`, firstName: 'Grace', lastName: 'Hopper', status: 'deactivated' }),
    pct: await insertUser(t.database, tenant.tenantId, { role: 'ReadOnly', email: `percent-${tenant.tenantId}@example.test`, firstName: '100%', lastName: 'Sure_thing' }),
  };
  // Spread creation times so sorting by createdAt is deterministic.
  let i = 0;
  for (const u of [admin, people.ada!, people.alan!, people.grace!, people.pct!]) {
    await t.database.pool.query(`update users set created_at = now() - make_interval(mins => $2) where id = $1`, [u.id, 100 - i++]);
  }
});
afterAll(async () => t.close());

describe('GET /api/v1/users', () => {
  it('lists the tenant’s users newest first with the spec’s fields and never a password hash', async () => {
    const res = await call(t.app, admin.token, 'GET', '/api/v1/users');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ page: 1, pageSize: 20, total: 5, totalPages: 1 });
    expect(ids(res)).toEqual([people.pct!.id, people.grace!.id, people.alan!.id, people.ada!.id, admin.id]);
    const ada = res.json().data.find((u: { id: string }) => u.id === people.ada!.id);
    expect(ada).toEqual({
      id: people.ada!.id,
      email: people.ada!.email,
      firstName: 'Ada',
      lastName: 'Lovelace',
      role: 'TenantUser',
      status: 'active',
      mfaEnabled: false,
      lastLoginAt: null,
      createdAt: expect.any(String),
      invitedBy: null,
      permissions: { canManageApiKeys: false, canViewBilling: false, canDeleteConversations: false },
    });
    expect(res.body).not.toMatch(/argon2|passwordHash|password_hash/);
    // The admin logged in, so lastLoginAt is set.
    expect(res.json().data.find((u: { id: string }) => u.id === admin.id).lastLoginAt).not.toBeNull();
  });

  it('filters by role, status and search over email, first and last name (case-insensitive, wildcards literal)', async () => {
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?role=TenantUser')).sort()).toEqual([people.ada!.id, people.grace!.id].sort());
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?status=deactivated'))).toEqual([people.grace!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?role=TenantUser&status=active'))).toEqual([people.ada!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=LOVELACE'))).toEqual([people.ada!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=alan'))).toEqual([people.alan!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=turing-'))).toEqual([people.alan!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=grace%20hop'))).toEqual([people.grace!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=100%25'))).toEqual([people.pct!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=e_t'))).toEqual([people.pct!.id]);
    expect(ids(await call(t.app, admin.token, 'GET', '/api/v1/users?search=nobody-here'))).toEqual([]);
  });

  it('pages and sorts like the other lists', async () => {
    const p1 = await call(t.app, admin.token, 'GET', '/api/v1/users?pageSize=2&sortBy=lastName&sortOrder=asc');
    expect(p1.json()).toMatchObject({ page: 1, pageSize: 2, total: 5, totalPages: 3 });
    expect(p1.json().data.map((u: { lastName: string }) => u.lastName)).toEqual(['Admin', 'Hopper']);
    const p3 = await call(t.app, admin.token, 'GET', '/api/v1/users?pageSize=2&page=3&sortBy=lastName&sortOrder=asc');
    expect(p3.json().data.map((u: { lastName: string }) => u.lastName)).toEqual(['Turing']);
    const byEmail = await call(t.app, admin.token, 'GET', '/api/v1/users?sortBy=email&sortOrder=asc');
    expect(byEmail.json().data.map((u: { email: string }) => u.email)).toEqual([...byEmail.json().data.map((u: { email: string }) => u.email)].sort());
  });

  it('names bad query parameters (422)', async () => {
    const res = await call(t.app, admin.token, 'GET', '/api/v1/users?role=Owner&status=gone&pageSize=101&sortBy=password');
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['pageSize', 'role', 'sortBy', 'status']);
  });

  it('is open to roles with users:read only, and never to API keys', async () => {
    const manager = await signedIn(t.app, t.database, tenant.tenantId, 'AgencyAccountManager');
    expect((await call(t.app, manager.token, 'GET', '/api/v1/users')).statusCode).toBe(200);
    // ReadOnly is "read-only everywhere": it may read users, not change them.
    const reader = await signedIn(t.app, t.database, tenant.tenantId, 'ReadOnly');
    expect((await call(t.app, reader.token, 'GET', '/api/v1/users')).statusCode).toBe(200);
    expect((await call(t.app, reader.token, 'POST', '/api/v1/users/invite', { email: 'x@example.com', firstName: 'X', lastName: 'Y', role: 'ReadOnly' })).statusCode).toBe(403);
    const user = await signedIn(t.app, t.database, tenant.tenantId, 'TenantUser');
    expect((await call(t.app, user.token, 'GET', '/api/v1/users')).statusCode).toBe(403);
    const key = await call(t.app, tenant.key, 'GET', '/api/v1/users');
    expect(key.statusCode).toBe(403);
    expect((await call(t.app, null, 'GET', '/api/v1/users')).statusCode).toBe(401);
  });

  it('shows only the caller’s tenant', async () => {
    const other = await createTenant(t.database);
    const otherAdmin = await signedIn(t.app, t.database, other.tenantId, 'Admin');
    const res = await call(t.app, otherAdmin.token, 'GET', '/api/v1/users');
    expect(ids(res)).toEqual([otherAdmin.id]);
  });
});

describe('GET /api/v1/users/{userId}', () => {
  it('returns one user of the tenant, and 404 for another tenant’s user or an unknown id', async () => {
    const res = await call(t.app, admin.token, 'GET', `/api/v1/users/${people.alan!.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: people.alan!.id, role: 'ReadOnly', email: people.alan!.email });
    expect(res.json()).not.toHaveProperty('timezone');

    const other = await createTenant(t.database);
    const stranger = await insertUser(t.database, other.tenantId, { role: 'Admin' });
    const cross = await call(t.app, admin.token, 'GET', `/api/v1/users/${stranger.id}`);
    expect(cross.statusCode).toBe(404);
    expect((await call(t.app, admin.token, 'GET', `/api/v1/users/${newId('usr')}`)).statusCode).toBe(404);
  });

  it('reports mfaEnabled from a confirmed TOTP factor or a FIDO2 credential, not from an unconfirmed one', async () => {
    const u = await insertUser(t.database, tenant.tenantId, { role: 'ReadOnly' });
    const mfa = async () => (await call(t.app, admin.token, 'GET', `/api/v1/users/${u.id}`)).json().mfaEnabled;
    await t.database.pool.query(`insert into totp_factors (user_id, secret_sealed) values ($1, 'sealed')`, [u.id]);
    expect(await mfa()).toBe(false);
    await t.database.pool.query(`update totp_factors set confirmed_at = now() where user_id = $1`, [u.id]);
    expect(await mfa()).toBe(true);
    await t.database.pool.query(`delete from totp_factors where user_id = $1`, [u.id]);
    await t.database.pool.query(`insert into webauthn_credentials (id, user_id, name, public_key) values ($1, $2, 'key', 'pk')`, [`cred-${u.id}`, u.id]);
    expect(await mfa()).toBe(true);
  });
});

describe('GET /api/v1/users/invitations and DELETE /api/v1/users/invitations/{id}', () => {
  it('lists pending invitations of the tenant only, pages them, and revoking removes one at once', async () => {
    const own = await createTenant(t.database);
    const boss = await signedIn(t.app, t.database, own.tenantId, 'Admin');
    const made: string[] = [];
    for (const n of [1, 2, 3]) {
      const res = await call(t.app, boss.token, 'POST', '/api/v1/users/invite', { email: `pending-${n}-${own.tenantId}@example.test`, firstName: 'P', lastName: String(n), role: 'ReadOnly' });
      expect(res.statusCode).toBe(201);
      made.push(res.json().invitationId);
    }
    const list = await call(t.app, boss.token, 'GET', '/api/v1/users/invitations?pageSize=2');
    expect(list.statusCode).toBe(200);
    expect(list.json()).toMatchObject({ page: 1, pageSize: 2, total: 3, totalPages: 2 });
    expect(list.json().data.map((i: { invitationId: string }) => i.invitationId)).toEqual([made[2], made[1]]);
    expect(list.json().data[0]).toMatchObject({ status: 'pending', role: 'ReadOnly', email: `pending-3-${own.tenantId}@example.test`, invitedBy: boss.id });

    // Another tenant sees none of them and cannot revoke them.
    const theirs = await call(t.app, admin.token, 'GET', '/api/v1/users/invitations?pageSize=100');
    expect(theirs.json().data.map((i: { invitationId: string }) => i.invitationId)).not.toContain(made[0]);
    expect((await call(t.app, admin.token, 'DELETE', `/api/v1/users/invitations/${made[0]}`)).statusCode).toBe(404);

    expect((await call(t.app, boss.token, 'DELETE', `/api/v1/users/invitations/${made[0]}`)).statusCode).toBe(204);
    expect((await call(t.app, boss.token, 'DELETE', `/api/v1/users/invitations/${made[0]}`)).statusCode).toBe(404);
    const after = await call(t.app, boss.token, 'GET', '/api/v1/users/invitations');
    expect(after.json().total).toBe(2);

    // The revoked address may be invited again; the old link stays dead.
    const mailText = t.mail.lastTo(`pending-1-${own.tenantId}@example.test`)!.text;
    expect((await call(t.app, boss.token, 'POST', '/api/v1/users/invite', { email: `pending-1-${own.tenantId}@example.test`, firstName: 'P', lastName: '1', role: 'ReadOnly' })).statusCode).toBe(201);
    expect((await call(t.app, null, 'POST', '/api/v1/auth/invitations/accept', { token: tokenFromMail(mailText), password: 'a long enough password' })).statusCode).toBe(400);
  });

  it('needs users:read to list and users:write to revoke', async () => {
    const reader = await signedIn(t.app, t.database, tenant.tenantId, 'TenantUser');
    expect((await call(t.app, reader.token, 'GET', '/api/v1/users/invitations')).statusCode).toBe(403);
    expect((await call(t.app, reader.token, 'DELETE', `/api/v1/users/invitations/${newId('inv')}`)).statusCode).toBe(403);
    expect((await call(t.app, tenant.key, 'GET', '/api/v1/users/invitations')).statusCode).toBe(403);
  });
});
