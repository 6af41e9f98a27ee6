import { and, eq } from 'drizzle-orm';
import { AppError } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { agents } from '../../db/schema/agents.js';
import type { AgentStatus } from '../../db/schema/agents.js';
import { phoneNumbers } from '../../db/schema/phone-numbers.js';
import type { NumberProvider } from '../../db/schema/phone-numbers.js';

export type PhoneNumberRow = typeof phoneNumbers.$inferSelect;
export type NewPhoneNumber = typeof phoneNumbers.$inferInsert;

/** An active number and the agent it is assigned to (null: unassigned, or the agent is gone). */
export interface InboundRoute {
  numberId: string;
  agent: { id: string; tenantId: string; status: AgentStatus } | null;
}

/**
 * The minimal number → agent mapping the voice loop needs (`phone_numbers`, migration
 * 0002). Provisioning, listing and assignment through the API are the telephony issue's
 * (#9) and will grow this file.
 */
export class PhoneNumberRepository {
  constructor(private readonly db: Db) {}

  /**
   * The active number `phoneNumber` (E.164, exactly as the carrier sent it) of `provider`
   * and its assigned agent. An agent of another tenant than the number's is treated as
   * no agent: a number routes only within its own tenant.
   */
  async findInboundRoute(provider: NumberProvider, phoneNumber: string): Promise<InboundRoute | undefined> {
    const [row] = await this.db
      .select({ numberId: phoneNumbers.id, agentId: agents.id, agentTenantId: agents.tenantId, agentStatus: agents.status })
      .from(phoneNumbers)
      .leftJoin(agents, and(eq(agents.id, phoneNumbers.assignedAgentId), eq(agents.tenantId, phoneNumbers.tenantId)))
      .where(and(eq(phoneNumbers.phoneNumber, phoneNumber), eq(phoneNumbers.provider, provider), eq(phoneNumbers.status, 'active')))
      .limit(1);
    if (!row) return undefined;
    return {
      numberId: row.numberId,
      agent: row.agentId && row.agentTenantId && row.agentStatus ? { id: row.agentId, tenantId: row.agentTenantId, status: row.agentStatus } : null,
    };
  }

  /** Adds a number; the same E.164 twice (on any tenant) is a 409. */
  async insert(row: NewPhoneNumber): Promise<PhoneNumberRow> {
    try {
      const [inserted] = await this.db.insert(phoneNumbers).values(row).returning();
      return inserted!;
    } catch (err) {
      if (isUniqueViolation(err, 'phone_numbers_e164_key')) throw new AppError('conflict', `The number ${row.phoneNumber} is already provisioned.`);
      throw err;
    }
  }
}
