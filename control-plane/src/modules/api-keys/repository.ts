import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { pageWithTotal } from '../../db/page-query.js';
import { apiKeys } from '../../db/schema/api-keys.js';
import type { ListApiKeysQuery } from './schemas.js';

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type NewApiKey = typeof apiKeys.$inferInsert;

const SORT_COLUMNS = { createdAt: apiKeys.createdAt, name: apiKeys.name, lastUsedAt: apiKeys.lastUsedAt, expiresAt: apiKeys.expiresAt } as const;

/** API keys of a tenant; revoked keys are kept (for audit) but invisible here. */
export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewApiKey): Promise<ApiKeyRow> {
    const [out] = await this.db.insert(apiKeys).values(row).returning();
    return out!;
  }

  async find(tenantId: string, id: string): Promise<ApiKeyRow | undefined> {
    const [row] = await this.db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)));
    return row;
  }

  async list(tenantId: string, q: ListApiKeysQuery): Promise<{ rows: ApiKeyRow[]; total: number }> {
    const cond = and(eq(apiKeys.tenantId, tenantId), isNull(apiKeys.revokedAt));
    const order = q.sortOrder === 'asc' ? asc : desc;
    const column = SORT_COLUMNS[q.sortBy];
    const orderBy = [q.sortOrder === 'asc' ? sql`${column} asc nulls first` : sql`${column} desc nulls last`, order(apiKeys.id)];
    return pageWithTotal(this.db, apiKeys, { where: cond, orderBy }, q);
  }

  /** Revokes at once: the next request with the key is refused. False when missing or already revoked. */
  async revoke(tenantId: string, id: string): Promise<boolean> {
    const res = await this.db
      .update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id });
    return res.length > 0;
  }
}
