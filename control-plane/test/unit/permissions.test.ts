import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '@vap/shared';
import { ROLES } from '../../src/db/schema/users.js';
import type { Role } from '../../src/db/schema/users.js';
import { RIGHTS, ROLE_MATRIX, USER_RIGHTS, apiKeyRights, mayGrant, rightsOf, spliceRoleMatrix, userPrincipal } from '../../src/modules/auth/permissions.js';
import type { Right, UserGrants } from '../../src/modules/auth/permissions.js';

const docs = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
const none = { canManageApiKeys: false, canViewBilling: false, canDeleteConversations: false };
const every = { canManageApiKeys: true, canViewBilling: true, canDeleteConversations: true };
const grants = (role: Role, flags = none): UserGrants => ({ role, ...flags });
const TENANT = { plan: 'business' as const, rateLimitPerMinute: null };

describe('role matrix', () => {
  it('docs/api.md shows exactly the matrix of the code (run bin/render-role-matrix.ts after a change)', () => {
    expect(spliceRoleMatrix(docs)).toBe(docs);
  });

  it('has one row per spec role and a cell for every right', () => {
    expect(Object.keys(ROLE_MATRIX).sort()).toEqual([...ROLES].sort());
    for (const role of ROLES) expect(Object.keys(ROLE_MATRIX[role]).sort(), role).toEqual([...RIGHTS].sort());
  });

  it('lets ReadOnly read and nothing else, billing only with canViewBilling, whatever its flags', () => {
    expect([...rightsOf(grants('ReadOnly'))].sort()).toEqual(['agents:read', 'analytics:read', 'conversations:read', 'profile', 'telephony:read', 'users:read', 'webhooks:read']);
    const flagged = rightsOf(grants('ReadOnly', every));
    expect(flagged.has('billing:read')).toBe(true);
    for (const r of flagged) expect(r === 'profile' || r.endsWith(':read'), r).toBe(true);
    expect(flagged.has('api-keys:manage')).toBe(false);
  });

  it('lets TenantUser manage agents and conversations but not users, keys or billing', () => {
    const r = rightsOf(grants('TenantUser'));
    for (const right of ['agents:write', 'conversations:write', 'conversations:read', 'telephony:read', 'webhooks:read'] as Right[]) expect(r.has(right), right).toBe(true);
    for (const right of ['users:read', 'users:write', 'users:admin', 'api-keys:manage', 'billing:read', 'conversations:delete', 'telephony:write', 'webhooks:write'] as Right[]) expect(r.has(right), right).toBe(false);
    const refined = rightsOf(grants('TenantUser', every));
    for (const right of ['api-keys:manage', 'billing:read', 'conversations:delete'] as Right[]) expect(refined.has(right), right).toBe(true);
    expect(refined.has('users:read')).toBe(false);
  });

  it('gives Admin everything and makes it the only role that deactivates users', () => {
    expect([...rightsOf(grants('Admin', every))].sort()).toEqual([...RIGHTS].sort());
    for (const role of ROLES) expect(rightsOf(grants(role, every)).has('users:admin'), role).toBe(role === 'Admin');
    expect([...rightsOf(grants('TenantOwner', every))].sort()).toEqual(RIGHTS.filter((r) => r !== 'users:admin').sort());
  });

  it('requires canDeleteConversations to delete conversations for every role, Admin included', () => {
    for (const role of ROLES) expect(rightsOf(grants(role, { ...every, canDeleteConversations: false })).has('conversations:delete'), role).toBe(false);
  });

  it('gives the agency roles their spec descriptions within the tenant', () => {
    const tech = rightsOf(grants('AgencyTechnicalManager'));
    for (const right of ['api-keys:manage', 'agents:write', 'webhooks:write', 'telephony:write'] as Right[]) expect(tech.has(right), right).toBe(true);
    expect(tech.has('users:write')).toBe(false);
    const account = rightsOf(grants('AgencyAccountManager'));
    for (const right of ['analytics:read', 'users:read', 'users:write'] as Right[]) expect(account.has(right), right).toBe(true);
    expect(account.has('agents:write')).toBe(false);
    const manager = rightsOf(grants('AgencyManager'));
    for (const right of ['agents:write', 'conversations:write', 'users:write'] as Right[]) expect(manager.has(right), right).toBe(true);
    expect(manager.has('users:admin')).toBe(false);
  });
});

describe('userPrincipal', () => {
  it('carries role, session and the scopes its rights allow, so scope-checked routes work for users', () => {
    const p = userPrincipal({ id: 'usr_1', tenantId: 'ten_1', ...grants('TenantUser', { ...none, canViewBilling: true }) }, TENANT, 'ses_1');
    expect(p).toMatchObject({ kind: 'user', actorId: 'usr_1', tenantId: 'ten_1', role: 'TenantUser', sessionId: 'ses_1', plan: 'business', canViewBilling: true, canManageApiKeys: false, canDeleteConversations: false });
    expect([...p.scopes].sort()).toEqual(['agents:read', 'agents:write', 'analytics:read', 'billing:read', 'conversations:read', 'conversations:write', 'telephony:read', 'webhooks:read']);
    for (const s of p.scopes) expect(SCOPES).toContain(s);
  });
});

describe('apiKeyRights', () => {
  it('derives key management and deletion from the key and never holds a user-only right', () => {
    const all = apiKeyRights([...SCOPES], true);
    for (const r of USER_RIGHTS) expect(all.has(r), r).toBe(false);
    expect(all.has('api-keys:manage')).toBe(true);
    expect(all.has('conversations:delete')).toBe(true);
    const narrow = apiKeyRights(['conversations:read'], false);
    expect([...narrow]).toEqual(['conversations:read']);
  });
});

describe('mayGrant', () => {
  it('lets a caller hand out only rights it holds', () => {
    const owner = { rights: rightsOf(grants('TenantOwner', every)) };
    expect(mayGrant(owner, grants('TenantOwner', every))).toBe(true);
    expect(mayGrant(owner, grants('Admin'))).toBe(false);
    const account = { rights: rightsOf(grants('AgencyAccountManager')) };
    expect(mayGrant(account, grants('ReadOnly'))).toBe(true);
    expect(mayGrant(account, grants('TenantUser'))).toBe(false);
    expect(mayGrant(account, grants('ReadOnly', { ...none, canViewBilling: true }))).toBe(false);
  });
});
