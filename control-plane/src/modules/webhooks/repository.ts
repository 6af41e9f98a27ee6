import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { pageWithTotal } from '../../db/page-query.js';
import { agents } from '../../db/schema/agents.js';
import { webhookDeliveries, webhookDeliveryAttempts, webhookEvents, webhooks } from '../../db/schema/webhooks.js';
import type { ListDeliveriesQuery, ListWebhooksQuery } from './schemas.js';

export type WebhookRow = typeof webhooks.$inferSelect;
export type NewWebhook = typeof webhooks.$inferInsert;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookDeliveryAttempts.$inferSelect;

/** Webhook configurations and their delivery log, always scoped to a tenant. */
export class WebhookRepository {
  constructor(private readonly db: Db) {}

  async agentExists(tenantId: string, agentId: string): Promise<boolean> {
    const [row] = await this.db
      .select({ id: agents.id })
      .from(agents)
      .where(and(eq(agents.tenantId, tenantId), eq(agents.id, agentId)));
    return row !== undefined;
  }

  async insert(values: NewWebhook): Promise<WebhookRow> {
    const [row] = await this.db.insert(webhooks).values(values).returning();
    return row!;
  }

  async find(tenantId: string, id: string): Promise<WebhookRow | undefined> {
    const [row] = await this.db
      .select()
      .from(webhooks)
      .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, id)));
    return row;
  }

  async list(tenantId: string, q: ListWebhooksQuery): Promise<{ rows: WebhookRow[]; total: number }> {
    const where = and(eq(webhooks.tenantId, tenantId), q.agentId ? eq(webhooks.agentId, q.agentId) : undefined);
    const dir = q.sortOrder === 'asc' ? asc : desc;
    const column = q.sortBy === 'url' ? webhooks.url : webhooks.createdAt;
    return pageWithTotal(this.db, webhooks, { where, orderBy: [dir(column), dir(webhooks.id)] }, q);
  }

  async update(tenantId: string, id: string, set: Partial<Pick<NewWebhook, 'url' | 'events' | 'enabled' | 'secretSealed' | 'secretHint'>>): Promise<WebhookRow | undefined> {
    const [row] = await this.db
      .update(webhooks)
      .set({ ...set, updatedAt: sql`now()` })
      .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, id)))
      .returning();
    return row;
  }

  /** Deletes the webhook with its delivery log (cascade). Its events go with the log retention purge. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    const gone = await this.db
      .delete(webhooks)
      .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, id)))
      .returning({ id: webhooks.id });
    return gone.length > 0;
  }

  async deliveries(webhookId: string, q: ListDeliveriesQuery): Promise<{ rows: DeliveryRow[]; attempts: AttemptRow[]; total: number }> {
    const d = webhookDeliveries;
    const filters: (SQL | undefined)[] = [eq(d.webhookId, webhookId), q.status ? eq(d.status, q.status) : undefined, q.eventType ? eq(d.eventType, q.eventType) : undefined];
    const where = and(...filters);
    const dir = q.sortOrder === 'asc' ? asc : desc;
    const { rows, total } = await pageWithTotal(this.db, d, { where, orderBy: [dir(d.createdAt), dir(d.eventId)] }, q);
    const attempts = rows.length === 0 ? [] : await this.attemptsOf(webhookId, rows.map((r) => r.eventId));
    return { rows, attempts, total };
  }

  async delivery(webhookId: string, eventId: string): Promise<{ row: DeliveryRow; attempts: AttemptRow[]; body: string } | undefined> {
    const [found] = await this.db
      .select({ row: webhookDeliveries, body: webhookEvents.body })
      .from(webhookDeliveries)
      .innerJoin(webhookEvents, eq(webhookEvents.id, webhookDeliveries.eventId))
      .where(and(eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.eventId, eventId)));
    if (!found) return undefined;
    return { row: found.row, body: found.body, attempts: await this.attemptsOf(webhookId, [eventId]) };
  }

  /**
   * Starts a new run of a finished delivery: pending, due now, six attempts again. Returns
   * the row, `busy` when the delivery is still pending (its run is not over), or undefined.
   */
  async replay(webhookId: string, eventId: string, now: Date): Promise<DeliveryRow | 'busy' | undefined> {
    const d = webhookDeliveries;
    const [row] = await this.db
      .update(d)
      .set({ status: 'pending', runAttempts: 0, replays: sql`${d.replays} + 1`, nextAttemptAt: now, leaseToken: null, lockedUntil: null, updatedAt: now })
      .where(and(eq(d.webhookId, webhookId), eq(d.eventId, eventId), inArray(d.status, ['delivered', 'failed'])))
      .returning();
    if (row) {
      await this.db.execute(sql`select pg_notify('webhook_deliveries', '')`);
      return row;
    }
    const [exists] = await this.db
      .select({ status: d.status })
      .from(d)
      .where(and(eq(d.webhookId, webhookId), eq(d.eventId, eventId)));
    return exists ? 'busy' : undefined;
  }

  private async attemptsOf(webhookId: string, eventIds: string[]): Promise<AttemptRow[]> {
    const a = webhookDeliveryAttempts;
    return this.db
      .select()
      .from(a)
      .where(and(eq(a.webhookId, webhookId), inArray(a.eventId, eventIds)))
      .orderBy(asc(a.eventId), asc(a.attempt));
  }
}
