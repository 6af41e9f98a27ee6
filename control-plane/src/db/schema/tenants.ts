import { integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/** Plans of the spec; the plan sets the API rate limit (enterprise: per-tenant override). */
export const PLANS = ['starter', 'professional', 'business', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export const tenants = pgTable(
  'tenants',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    plan: text('plan').$type<Plan>().notNull(),
    status: text('status').notNull().default('active'),
    /** Requests per minute for enterprise tenants; null means the configured default. */
    rateLimitPerMinute: integer('rate_limit_per_minute'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('tenants_slug_key').on(t.slug)],
);
