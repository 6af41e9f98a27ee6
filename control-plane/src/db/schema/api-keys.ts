import { boolean, index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { Scope } from '@vap/shared';
import { tenants } from './tenants.js';

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** `svc_live_` / `svc_sb_` plus the first characters of the random part. */
    keyPrefix: text('key_prefix').notNull(),
    /** SHA-256 of the whole key, hex. Keys carry 256 random bits, so a fast hash is safe. */
    keyHash: text('key_hash').notNull(),
    environment: text('environment').$type<'live' | 'sandbox'>().notNull(),
    scopes: text('scopes').array().$type<Scope[]>().notNull(),
    canManageApiKeys: boolean('can_manage_api_keys').notNull().default(false),
    createdBy: text('created_by'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('api_keys_hash_key').on(t.keyHash), index('api_keys_tenant_created_idx').on(t.tenantId, t.createdAt)],
);
