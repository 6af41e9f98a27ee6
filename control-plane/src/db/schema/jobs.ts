import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

export type JobStatus = 'pending' | 'running' | 'succeeded' | 'failed';

/**
 * Durable background work (post-call analysis now; scheduled calls, indexing and reports
 * later). A row is the job: replicas claim due rows with `FOR UPDATE SKIP LOCKED` and a
 * lease, so a job survives restarts and a crashed worker's job is taken over when its
 * lease runs out. `(kind, subject_id)` is unique: one analysis per conversation.
 */
export const jobs = pgTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    kind: text('kind').notNull(),
    tenantId: text('tenant_id').notNull(),
    /** What the job is about (a conversation id for analysis). */
    subjectId: text('subject_id').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status').$type<JobStatus>().notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    runAt: timestamp('run_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    leaseUntil: timestamp('lease_until', { withTimezone: true, mode: 'date' }),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('jobs_kind_subject_key').on(t.kind, t.subjectId),
    index('jobs_due_idx').on(t.runAt).where(sql`status IN ('pending', 'running')`),
  ],
);
