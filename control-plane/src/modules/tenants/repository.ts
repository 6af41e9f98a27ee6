import type { Db } from '../../db/database.js';
import { tenants } from '../../db/schema/tenants.js';

export type TenantRow = typeof tenants.$inferSelect;
export type NewTenant = typeof tenants.$inferInsert;

/** Tenants. The full Tenants API comes with the agency issue; this is what the rest needs now. */
export class TenantRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewTenant): Promise<TenantRow> {
    const [out] = await this.db.insert(tenants).values(row).returning();
    return out!;
  }
}
