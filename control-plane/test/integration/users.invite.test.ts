import { verify } from '@node-rs/argon2';
import { describe, expect, it } from 'vitest';
import { SmtpMailer } from '../../src/mail/smtp-mailer.js';
import { hashInvitationToken } from '../../src/modules/users/service.js';
import { call, createTenant } from '../helpers.js';
import { decodeQuotedPrintable, startSmtpSink } from '../smtp-sink.js';
import { createUsersTestApp, insertUser, login, signedIn, tokenFromMail, usersWorld } from '../users-fixtures.js';

const w = usersWorld({ firstName: 'Ada', lastName: 'Lovelace' });

const invite = (token: string, body: Record<string, unknown>) => call(w.t.app, token, 'POST', '/api/v1/users/invite', body);
const accept = (token: string, password: string) => call(w.t.app, null, 'POST', '/api/v1/auth/invitations/accept', { token, password });
const email = (tag: string) => `${tag}-${Math.random().toString(36).slice(2, 10)}@example.test`;

describe('POST /api/v1/users/invite', () => {
  it('creates a pending invitation valid 7 days and emails a link with a single-use token stored only as a hash', async () => {
    const to = email('grace');
    const before = Date.now();
    const res = await invite(w.admin.token, { email: to, firstName: 'Grace', lastName: 'Hopper', role: 'TenantUser', message: 'Welcome aboard!\nSee you Monday.' });
    expect(res.statusCode, res.body).toBe(201);
    const inv = res.json();
    expect(inv).toMatchObject({ invitationId: expect.stringMatching(/^inv_/), email: to, role: 'TenantUser', status: 'pending', invitedBy: w.admin.id });
    const expiresAt = Date.parse(inv.expiresAt);
    expect(expiresAt - before).toBeGreaterThanOrEqual(7 * 24 * 3600 * 1000 - 1000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(7 * 24 * 3600 * 1000);
    expect(Date.parse(inv.sentAt)).toBeGreaterThanOrEqual(before - 1000);

    const mail = w.t.mail.lastTo(to)!;
    expect(mail.subject).toContain(`Test ${w.tenant.tenantId}`);
    expect(mail.text).toContain('Ada Lovelace has invited you');
    expect(mail.text).toContain('as TenantUser');
    expect(mail.text).toContain('> Welcome aboard!\n> See you Monday.');
    const token = tokenFromMail(mail.text);
    expect(mail.text).toContain(`https://app.example.test/accept-invitation?token=${token}`);

    const { rows } = await w.t.database.pool.query('select * from invitations where id = $1', [inv.invitationId]);
    expect(rows[0].token_hash).toBe(hashInvitationToken(token));
    expect(JSON.stringify(rows[0])).not.toContain(token);
    expect(res.body).not.toContain(token);
  });

  it('refuses an address that is already a user (any tenant) or has a pending invitation, naming it (409)', async () => {
    const existing = await insertUser(w.t.database, w.tenant.tenantId, { role: 'ReadOnly' });
    const dup = await invite(w.admin.token, { email: existing.email.toUpperCase(), firstName: 'A', lastName: 'B', role: 'ReadOnly' });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().detail).toContain(existing.email.toUpperCase());

    const other = await createTenant(w.t.database);
    const elsewhere = await insertUser(w.t.database, other.tenantId, { role: 'ReadOnly' });
    expect((await invite(w.admin.token, { email: elsewhere.email, firstName: 'A', lastName: 'B', role: 'ReadOnly' })).statusCode).toBe(409);

    const to = email('twice');
    expect((await invite(w.admin.token, { email: to, firstName: 'A', lastName: 'B', role: 'ReadOnly' })).statusCode).toBe(201);
    const again = await invite(w.admin.token, { email: to, firstName: 'A', lastName: 'B', role: 'TenantUser' });
    expect(again.statusCode).toBe(409);
    expect(again.json().detail).toContain(to);
  });

  it('serialises concurrent invitations to one address: exactly one is created', async () => {
    const to = email('race');
    const results = await Promise.all([1, 2, 3, 4].map(() => invite(w.admin.token, { email: to, firstName: 'R', lastName: 'C', role: 'ReadOnly' })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409]);
  });

  it('names each bad field (422)', async () => {
    const res = await invite(w.admin.token, { email: 'not-an-email', firstName: '', lastName: 'x'.repeat(101), role: 'Owner', message: 'm'.repeat(2001) });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['email', 'firstName', 'lastName', 'message', 'role']);
    const missing = await invite(w.admin.token, { firstName: 'A' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['email', 'lastName', 'role']);
  });

  it('does not let a caller invite a role with rights they lack, and is refused to roles without users:write and to API keys', async () => {
    const owner = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'TenantOwner');
    const up = await invite(owner.token, { email: email('up'), firstName: 'A', lastName: 'B', role: 'Admin' });
    expect(up.statusCode).toBe(403);
    expect(up.json().detail).toContain('users:admin');
    expect((await invite(owner.token, { email: email('ok'), firstName: 'A', lastName: 'B', role: 'TenantOwner' })).statusCode).toBe(201);

    const user = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'TenantUser');
    expect((await invite(user.token, { email: email('no'), firstName: 'A', lastName: 'B', role: 'ReadOnly' })).statusCode).toBe(403);
    expect((await invite(w.tenant.key, { email: email('key'), firstName: 'A', lastName: 'B', role: 'ReadOnly' })).statusCode).toBe(403);
    expect((await invite('', { email: email('anon'), firstName: 'A', lastName: 'B', role: 'ReadOnly' })).statusCode).toBe(401);
  });
});

describe('POST /api/v1/auth/invitations/accept', () => {
  async function invited(role = 'TenantUser') {
    const to = email('invitee');
    const res = await invite(w.admin.token, { email: to, firstName: 'Ivy', lastName: 'Invitee', role });
    expect(res.statusCode).toBe(201);
    return { email: to, invitationId: res.json().invitationId as string, token: tokenFromMail(w.t.mail.lastTo(to)!.text) };
  }

  it('creates the user with the invited role and names, signs them in, and the password logs in afterwards', async () => {
    const inv = await invited('TenantUser');
    const password = 'correct horse battery staple';
    const res = await accept(inv.token, password);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body.user).toMatchObject({ email: inv.email, firstName: 'Ivy', lastName: 'Invitee', role: 'TenantUser', status: 'active', invitedBy: w.admin.id, mfaEnabled: false, timezone: 'UTC' });
    expect(body).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, mfaRequired: false });
    expect(body.user).not.toHaveProperty('passwordHash');

    const me = await call(w.t.app, body.accessToken, 'GET', '/api/v1/users/me');
    expect(me.statusCode).toBe(200);
    expect(me.json().id).toBe(body.user.id);

    const { rows } = await w.t.database.pool.query('select u.password_hash, u.tenant_id, i.status, i.accepted_at from users u, invitations i where u.id = $1 and i.id = $2', [body.user.id, inv.invitationId]);
    expect(rows[0].tenant_id).toBe(w.tenant.tenantId);
    expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
    expect(await verify(rows[0].password_hash, password)).toBe(true);
    expect(rows[0].status).toBe('accepted');
    expect(rows[0].accepted_at).not.toBeNull();

    const again = await login(w.t.app, inv.email, password);
    expect(again.accessToken).toBeTruthy();

    // Accepted invitations leave the pending list.
    const pending = await call(w.t.app, w.admin.token, 'GET', '/api/v1/users/invitations?pageSize=100');
    expect(pending.json().data.map((i: { invitationId: string }) => i.invitationId)).not.toContain(inv.invitationId);
  });

  it('accepts a token once, even when presented twice at the same moment', async () => {
    const inv = await invited();
    const [a, b] = await Promise.all([accept(inv.token, 'first password here'), accept(inv.token, 'second password here')]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([201, 400]);
    const used = await accept(inv.token, 'third password here');
    expect(used.statusCode).toBe(400);
    expect(used.json().type).toMatch(/\/errors\/invitation-invalid$/);
    expect(used.json().detail).toContain('already accepted');
    const { rows } = await w.t.database.pool.query('select count(*)::int as n from users where lower(email) = lower($1)', [inv.email]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a revoked invitation and an unknown token with invitation-invalid, saying which', async () => {
    const inv = await invited();
    expect((await call(w.t.app, w.admin.token, 'DELETE', `/api/v1/users/invitations/${inv.invitationId}`)).statusCode).toBe(204);
    const revoked = await accept(inv.token, 'a long enough password');
    expect(revoked.statusCode).toBe(400);
    expect(revoked.json()).toMatchObject({ type: expect.stringMatching(/invitation-invalid$/), detail: expect.stringContaining('revoked') });
    const unknown = await accept('x'.repeat(43), 'a long enough password');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().detail).toContain('not valid');
  });

  it('refuses an expired invitation with 410 invitation-expired and creates nobody', async () => {
    const inv = await invited();
    await w.t.database.pool.query(`update invitations set expires_at = now() - interval '1 second' where id = $1`, [inv.invitationId]);
    const res = await accept(inv.token, 'a long enough password');
    expect(res.statusCode).toBe(410);
    expect(res.json().type).toMatch(/\/errors\/invitation-expired$/);
    const { rows } = await w.t.database.pool.query('select count(*)::int as n from users where lower(email) = lower($1)', [inv.email]);
    expect(rows[0].n).toBe(0);
    // An expired invitation leaves the pending list and no longer blocks a new one.
    const list = await call(w.t.app, w.admin.token, 'GET', '/api/v1/users/invitations?pageSize=100');
    expect(list.json().data.map((i: { invitationId: string }) => i.invitationId)).not.toContain(inv.invitationId);
    expect((await invite(w.admin.token, { email: inv.email, firstName: 'I', lastName: 'V', role: 'ReadOnly' })).statusCode).toBe(201);
  });

  it('requires a password of 12+ characters that does not contain the email, naming the field', async () => {
    const inv = await invited();
    const short = await accept(inv.token, 'short');
    expect(short.statusCode).toBe(422);
    expect(short.json().errors).toEqual([{ field: 'password', message: 'must be at least 12 characters' }]);
    const mine = await accept(inv.token, `${inv.email.toUpperCase()}!`);
    expect(mine.statusCode).toBe(422);
    expect(mine.json().errors).toEqual([{ field: 'password', message: 'must not contain your email address' }]);
    // Neither attempt used the token up.
    expect((await accept(inv.token, 'now a proper password')).statusCode).toBe(201);
  });

  it('needs no credential (a bearer key does not matter)', async () => {
    const inv = await invited('ReadOnly');
    const res = await call(w.t.app, 'svc_sb_not-a-real-key', 'POST', '/api/v1/auth/invitations/accept', { token: inv.token, password: 'a long enough password' });
    expect(res.statusCode).toBe(201);
    expect(res.json().user.role).toBe('ReadOnly');
  });
});

describe('invitations over SMTP', () => {
  it('delivers the invitation to a real SMTP server and the link in it accepts', async () => {
    const sink = await startSmtpSink();
    const mailer = new SmtpMailer({ url: `smtp://127.0.0.1:${sink.port}`, from: 'Voice Agent Platform <no-reply@example.test>' });
    const s = await createUsersTestApp({ mailer });
    try {
      const own = await createTenant(s.database);
      const boss = await signedIn(s.app, s.database, own.tenantId, 'Admin');
      const to = email('smtp');
      const res = await call(s.app, boss.token, 'POST', '/api/v1/users/invite', { email: to, firstName: 'Sam', lastName: 'Smtp', role: 'ReadOnly' });
      expect(res.statusCode).toBe(201);
      const [msg] = await sink.waitFor(1);
      expect(msg!.to).toEqual([to]);
      expect(msg!.from).toBe('no-reply@example.test');
      const token = tokenFromMail(decodeQuotedPrintable(msg!.raw));
      const ok = await call(s.app, null, 'POST', '/api/v1/auth/invitations/accept', { token, password: 'delivered by smtp' });
      expect(ok.statusCode).toBe(201);
      expect(ok.json().user.email).toBe(to);
    } finally {
      await s.close();
      await mailer.close();
      await sink.close();
    }
  });

  it('answers 503 and keeps no invitation when the SMTP server refuses, so a retry works', async () => {
    const sink = await startSmtpSink({ auth: { user: 'u', pass: 'right' } });
    const mailer = new SmtpMailer({ url: `smtp://u:wrong@127.0.0.1:${sink.port}`, from: 'no-reply@example.test' });
    const s = await createUsersTestApp({ mailer });
    try {
      const own = await createTenant(s.database);
      const boss = await signedIn(s.app, s.database, own.tenantId, 'Admin');
      const to = email('down');
      const res = await call(s.app, boss.token, 'POST', '/api/v1/users/invite', { email: to, firstName: 'D', lastName: 'Own', role: 'ReadOnly' });
      expect(res.statusCode).toBe(503);
      expect(res.json().detail).toContain('no invitation was created');
      const { rows } = await s.database.pool.query('select count(*)::int as n from invitations where email = $1', [to]);
      expect(rows[0].n).toBe(0);
    } finally {
      await s.close();
      await mailer.close();
      await sink.close();
    }
  });
});
