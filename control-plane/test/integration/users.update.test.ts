import { describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { call, createTenant } from '../helpers.js';
import { insertUser, login, signedIn, usersWorld } from '../users-fixtures.js';

const w = usersWorld({ canManageApiKeys: true, canViewBilling: true, canDeleteConversations: true });

const patch = (token: string, id: string, body: unknown) => call(w.t.app, token, 'PATCH', `/api/v1/users/${id}`, body);

describe('PATCH /api/v1/users/{userId}', () => {
  it('changes role, names and permissions, and the new role applies to the user’s next request', async () => {
    const u = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'ReadOnly');
    expect((await call(w.t.app, u.token, 'POST', '/api/v1/agents', { name: 'x' })).statusCode).toBe(403);
    const res = await patch(w.admin.token, u.id, { role: 'TenantUser', firstName: 'New', lastName: 'Name', permissions: { canViewBilling: true } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: u.id, role: 'TenantUser', firstName: 'New', lastName: 'Name', permissions: { canManageApiKeys: false, canViewBilling: true, canDeleteConversations: false } });
    // Same access token, next request: the role is read from the row, not the token.
    expect((await call(w.t.app, u.token, 'POST', '/api/v1/agents', { name: 'x' })).statusCode).toBe(400);
    const partial = await patch(w.admin.token, u.id, { permissions: { canDeleteConversations: true } });
    expect(partial.json().permissions).toEqual({ canManageApiKeys: false, canViewBilling: true, canDeleteConversations: true });
    // An Admin without canDeleteConversations does not hold conversations:delete, so cannot hand it out.
    const plainAdmin = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'Admin');
    const other = await insertUser(w.t.database, w.tenant.tenantId, { role: 'TenantUser' });
    const grant = await patch(plainAdmin.token, other.id, { permissions: { canDeleteConversations: true } });
    expect(grant.statusCode).toBe(403);
    expect(grant.json().detail).toContain('conversations:delete');
  });

  it('names bad fields (422), refuses an empty change and unknown fields', async () => {
    const u = await insertUser(w.t.database, w.tenant.tenantId, { role: 'ReadOnly' });
    const bad = await patch(w.admin.token, u.id, { role: 'God', firstName: '', permissions: { canViewBilling: 'yes' } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['firstName', 'permissions.canViewBilling', 'role']);
    expect((await patch(w.admin.token, u.id, {})).statusCode).toBe(422);
    const unknown = await patch(w.admin.token, u.id, { email: 'new@example.test' });
    expect(unknown.statusCode).toBe(422);
    expect(JSON.stringify(unknown.json().errors)).toContain('email');
  });

  it('lets nobody give rights they lack or change someone more powerful', async () => {
    const owner = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'TenantOwner');
    const u = await insertUser(w.t.database, w.tenant.tenantId, { role: 'TenantUser' });
    const promote = await patch(owner.token, u.id, { role: 'Admin' });
    expect(promote.statusCode).toBe(403);
    expect(promote.json().detail).toContain('users:admin');
    const demoteAdmin = await patch(owner.token, w.admin.id, { role: 'ReadOnly' });
    expect(demoteAdmin.statusCode).toBe(403);
    expect((await patch(owner.token, u.id, { role: 'TenantOwner' })).statusCode).toBe(200);

    const manager = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'AgencyAccountManager');
    const reader = await insertUser(w.t.database, w.tenant.tenantId, { role: 'ReadOnly' });
    const grantKeys = await patch(manager.token, reader.id, { role: 'TenantUser', permissions: { canManageApiKeys: true } });
    expect(grantKeys.statusCode).toBe(403);
    expect(grantKeys.json().detail).toContain('agents:write');
    expect((await patch(manager.token, reader.id, { firstName: 'Renamed' })).statusCode).toBe(200);
  });

  it('keeps the last active Admin an Admin (409), but an Admin may step down when another remains', async () => {
    const own = await createTenant(w.t.database);
    const a1 = await signedIn(w.t.app, w.t.database, own.tenantId, 'Admin');
    const last = await patch(a1.token, a1.id, { role: 'TenantOwner' });
    expect(last.statusCode).toBe(409);
    expect(last.json().type).toMatch(/invalid-state$/);
    expect(last.json().detail).toContain('last active Admin');
    const a2 = await insertUser(w.t.database, own.tenantId, { role: 'Admin' });
    expect((await patch(a1.token, a1.id, { role: 'TenantOwner' })).statusCode).toBe(200);
    // a1 is no longer an Admin: a2 is the last one and a1's rights no longer reach it.
    expect((await patch(a1.token, a2.id, { role: 'ReadOnly' })).statusCode).toBe(403);
  });

  it('answers 404 for another tenant’s user, 403 to API keys and to roles without users:write', async () => {
    const other = await createTenant(w.t.database);
    const stranger = await insertUser(w.t.database, other.tenantId, { role: 'ReadOnly' });
    expect((await patch(w.admin.token, stranger.id, { firstName: 'Hijack' })).statusCode).toBe(404);
    const { rows } = await w.t.database.pool.query('select first_name from users where id = $1', [stranger.id]);
    expect(rows[0].first_name).not.toBe('Hijack');
    expect((await patch(w.tenant.key, stranger.id, { firstName: 'x' })).statusCode).toBe(403);
    const user = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'TenantUser');
    expect((await patch(user.token, w.admin.id, { firstName: 'x' })).statusCode).toBe(403);
  });
});

describe('POST /api/v1/users/{userId}/deactivate and /reactivate', () => {
  it('deactivates at once: every session revoked, the access token refused, refresh and login fail; data kept; reactivate restores login', async () => {
    const victim = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'TenantUser');
    const second = await login(w.t.app, victim.email, victim.password);
    expect((await call(w.t.app, victim.token, 'GET', '/api/v1/users/me')).statusCode).toBe(200);

    const res = await call(w.t.app, w.admin.token, 'POST', `/api/v1/users/${victim.id}/deactivate`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: victim.id, status: 'deactivated', email: victim.email });

    const { rows } = await w.t.database.pool.query('select revoked_at, revoked_reason from auth_sessions where user_id = $1', [victim.id]);
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r).toMatchObject({ revoked_at: expect.any(Date), revoked_reason: 'deactivated' });

    expect((await call(w.t.app, victim.token, 'GET', '/api/v1/users/me')).statusCode).toBe(401);
    expect((await call(w.t.app, null, 'POST', '/api/v1/auth/refresh', { refreshToken: second.refreshToken })).statusCode).toBe(401);
    expect((await call(w.t.app, null, 'POST', '/api/v1/auth/login', { email: victim.email, password: victim.password })).statusCode).toBe(401);

    const kept = await w.t.database.pool.query('select status, deactivated_at, password_hash from users where id = $1', [victim.id]);
    expect(kept.rows[0]).toMatchObject({ status: 'deactivated', deactivated_at: expect.any(Date), password_hash: expect.stringMatching(/^\$argon2id\$/) });
    expect((await call(w.t.app, w.admin.token, 'GET', `/api/v1/users?status=deactivated`)).json().data.map((u: { id: string }) => u.id)).toContain(victim.id);

    // Repeating it is harmless.
    expect((await call(w.t.app, w.admin.token, 'POST', `/api/v1/users/${victim.id}/deactivate`)).statusCode).toBe(200);

    const back = await call(w.t.app, w.admin.token, 'POST', `/api/v1/users/${victim.id}/reactivate`);
    expect(back.statusCode).toBe(200);
    expect(back.json().status).toBe('active');
    const again = await login(w.t.app, victim.email, victim.password);
    expect((await call(w.t.app, again.accessToken, 'GET', '/api/v1/users/me')).statusCode).toBe(200);
    // Sessions ended by the deactivation stay ended.
    expect((await call(w.t.app, victim.token, 'GET', '/api/v1/users/me')).statusCode).toBe(401);
  });

  it('is for Admins only: a TenantOwner, other roles and API keys get 403 and nothing changes', async () => {
    const u = await insertUser(w.t.database, w.tenant.tenantId, { role: 'ReadOnly' });
    const owner = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'TenantOwner');
    const manager = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'AgencyManager');
    for (const token of [owner.token, manager.token, w.tenant.key]) {
      expect((await call(w.t.app, token, 'POST', `/api/v1/users/${u.id}/deactivate`)).statusCode).toBe(403);
      expect((await call(w.t.app, token, 'POST', `/api/v1/users/${u.id}/reactivate`)).statusCode).toBe(403);
    }
    expect((await call(w.t.app, null, 'POST', `/api/v1/users/${u.id}/deactivate`)).statusCode).toBe(401);
    const { rows } = await w.t.database.pool.query('select status from users where id = $1', [u.id]);
    expect(rows[0].status).toBe('active');
  });

  it('refuses to deactivate yourself (409) and answers 404 across tenants', async () => {
    const self = await call(w.t.app, w.admin.token, 'POST', `/api/v1/users/${w.admin.id}/deactivate`);
    expect(self.statusCode).toBe(409);
    expect(self.json().detail).toContain('yourself');
    const other = await createTenant(w.t.database);
    const stranger = await signedIn(w.t.app, w.t.database, other.tenantId, 'ReadOnly');
    expect((await call(w.t.app, w.admin.token, 'POST', `/api/v1/users/${stranger.id}/deactivate`)).statusCode).toBe(404);
    expect((await call(w.t.app, stranger.token, 'GET', '/api/v1/users/me')).statusCode).toBe(200);
    expect((await call(w.t.app, w.admin.token, 'POST', `/api/v1/users/${newId('usr')}/reactivate`)).statusCode).toBe(404);
  });

  it('never leaves an account without an active Admin, even when two Admins deactivate each other at once', async () => {
    const own = await createTenant(w.t.database);
    const a = await signedIn(w.t.app, w.t.database, own.tenantId, 'Admin');
    const b = await signedIn(w.t.app, w.t.database, own.tenantId, 'Admin');
    const [ab, ba] = await Promise.all([call(w.t.app, a.token, 'POST', `/api/v1/users/${b.id}/deactivate`), call(w.t.app, b.token, 'POST', `/api/v1/users/${a.id}/deactivate`)]);
    // One wins. The other either reached the last-Admin check after the winner's commit (409),
    // or its own session had already ended with the winner's deactivation of it when it was
    // authenticated (401): which one depends on how the two requests interleave.
    const [won, lost] = ab.statusCode === 200 ? [ab, ba] : [ba, ab];
    expect(won.statusCode).toBe(200);
    expect([409, 401]).toContain(lost.statusCode);
    // (401: its session revoked by the deactivation, or, read before the revocation, its user deactivated)
    if (lost.statusCode === 401) expect(['The session has ended (logged out, revoked or expired); log in again.', 'This user is deactivated.']).toContain(lost.json().detail);
    else expect(lost.json().type).toMatch(/invalid-state$/);
    const { rows } = await w.t.database.pool.query(`select count(*)::int as n from users where tenant_id = $1 and role = 'Admin' and status = 'active'`, [own.tenantId]);
    expect(rows[0].n).toBe(1);
  });
});
