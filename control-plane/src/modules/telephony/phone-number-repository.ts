import { and, asc, count, desc, eq, getTableColumns, isNull, or, sql } from 'drizzle-orm';
import pg from 'pg';
import { AppError } from '@vap/shared';
import { poolOf } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { agents } from '../../db/schema/agents.js';
import type { AgentStatus } from '../../db/schema/agents.js';
import { conversations } from '../../db/schema/conversations.js';
import { phoneNumbers } from '../../db/schema/phone-numbers.js';
import type { NumberProvider } from '../../db/schema/phone-numbers.js';
import type { ListNumbersQuery } from './phone-number-schemas.js';

export type PhoneNumberRow = typeof phoneNumbers.$inferSelect;
export type NewPhoneNumber = typeof phoneNumbers.$inferInsert;
/** A number with the name of its assigned agent (null: unassigned). */
export type PhoneNumberWithAgent = PhoneNumberRow & { assignedAgentName: string | null };

/** What an assignment did: the number, or why it did not happen. */
export type AssignResult = { kind: 'assigned'; row: PhoneNumberRow } | { kind: 'number-not-found' } | { kind: 'agent-not-found' } | { kind: 'taken'; assignedAgentId: string };

/** Calls of a number in a period, as counted in SQL (see {@link PhoneNumberRepository.stats}). */
export interface NumberCallStats {
  inboundCalls: number;
  outboundCalls: number;
  billedMinutes: number;
  totalCostUsd: number;
}

/** An active number and the agent it is assigned to (null: unassigned, or the agent is gone). */
export interface InboundRoute {
  numberId: string;
  agent: { id: string; tenantId: string; status: AgentStatus } | null;
}

/**
 * Phone numbers (`phone_numbers`): the number → agent mapping the voice loop routes by, and
 * the tenant-scoped reads and writes of the numbers API (#9). Only `active` numbers route,
 * can be assigned or released; `released` rows stay for statistics and billing.
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

  /** Adds a number; the same E.164 twice among numbers not released (on any tenant) is a 409. */
  async insert(row: NewPhoneNumber): Promise<PhoneNumberRow> {
    try {
      const [inserted] = await this.db.insert(phoneNumbers).values(row).returning();
      return inserted!;
    } catch (err) {
      if (isUniqueViolation(err, 'phone_numbers_e164_key')) throw new AppError('conflict', `The number ${row.phoneNumber} is already provisioned.`);
      throw err;
    }
  }

  /**
   * Runs `fn` while holding the purchase lock of `phoneNumber` (a Postgres advisory lock, so every
   * control plane sharing the database sees it), or returns `busy` at once when another request
   * holds it: two purchases of one number never reach the carrier together. The lock lives on a
   * connection of its own, outside the pool, for the length of `fn` (a carrier call): held on a
   * pooled one, as many purchases as the pool has connections would leave `fn` none to run on.
   * Closing that connection releases the lock whatever happened.
   */
  async withPurchaseLock<T>(phoneNumber: string, fn: () => Promise<T>): Promise<{ busy: true } | { busy: false; value: T }> {
    const client = new pg.Client(poolOf(this.db).options);
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtextextended($1, 0)) as locked', [`phone-number purchase:${phoneNumber}`]);
      if (rows[0]?.locked !== true) return { busy: true };
      return { busy: false, value: await fn() };
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** The number (any tenant) that holds `phoneNumber` now, if any: released numbers do not count. */
  async findHeld(phoneNumber: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await this.db
      .select()
      .from(phoneNumbers)
      .where(and(eq(phoneNumbers.phoneNumber, phoneNumber), sql`${phoneNumbers.status} <> 'released'`))
      .limit(1);
    return row;
  }

  /** How many numbers the tenant holds (not released). */
  async countHeld(tenantId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: count() })
      .from(phoneNumbers)
      .where(and(eq(phoneNumbers.tenantId, tenantId), sql`${phoneNumbers.status} <> 'released'`));
    return row?.n ?? 0;
  }

  /** One number of the tenant, in any status, with its agent's name. */
  async find(tenantId: string, id: string): Promise<PhoneNumberWithAgent | undefined> {
    const [row] = await this.db
      .select({ ...getTableColumns(phoneNumbers), assignedAgentName: agents.name })
      .from(phoneNumbers)
      .leftJoin(agents, eq(agents.id, phoneNumbers.assignedAgentId))
      .where(and(eq(phoneNumbers.tenantId, tenantId), eq(phoneNumbers.id, id)));
    return row;
  }

  /** A page of the tenant's numbers in one status, with their agents' names. */
  async list(tenantId: string, q: ListNumbersQuery): Promise<{ rows: PhoneNumberWithAgent[]; total: number }> {
    const where = and(eq(phoneNumbers.tenantId, tenantId), eq(phoneNumbers.status, q.status));
    const dir = q.sortOrder === 'asc' ? asc : desc;
    const column = {
      provisionedAt: phoneNumbers.provisionedAt,
      phoneNumber: phoneNumbers.phoneNumber,
      friendlyName: phoneNumbers.friendlyName,
      country: phoneNumbers.country,
      monthlyCostUsd: phoneNumbers.monthlyCostUsd,
    }[q.sortBy];
    const [rows, [total]] = await Promise.all([
      this.db
        .select({ ...getTableColumns(phoneNumbers), assignedAgentName: agents.name })
        .from(phoneNumbers)
        .leftJoin(agents, eq(agents.id, phoneNumbers.assignedAgentId))
        .where(where)
        .orderBy(dir(column), dir(phoneNumbers.id))
        .limit(q.pageSize)
        .offset((q.page - 1) * q.pageSize),
      this.db.select({ n: count() }).from(phoneNumbers).where(where),
    ]);
    return { rows, total: total?.n ?? 0 };
  }

  /**
   * Assigns an active number to an agent of the same tenant, in one statement so two
   * concurrent assignments cannot both win: it changes the row only while the number is
   * unassigned or already this agent's (then it is a no-op that still answers the row).
   */
  async assign(tenantId: string, id: string, agentId: string, retry = true): Promise<AssignResult> {
    const agentOfTenant = this.db
      .select({ id: agents.id })
      .from(agents)
      .where(and(eq(agents.id, agentId), eq(agents.tenantId, tenantId)));
    let updated: PhoneNumberRow | undefined;
    try {
      [updated] = await this.db
        .update(phoneNumbers)
        .set({ assignedAgentId: agentId })
        .where(
          and(
            eq(phoneNumbers.tenantId, tenantId),
            eq(phoneNumbers.id, id),
            eq(phoneNumbers.status, 'active'),
            or(isNull(phoneNumbers.assignedAgentId), eq(phoneNumbers.assignedAgentId, agentId)),
            sql`exists ${agentOfTenant}`,
          ),
        )
        .returning();
    } catch (err) {
      // The agent was deleted between the exists check and the write (foreign key).
      if (isForeignKeyViolation(err)) return { kind: 'agent-not-found' };
      throw err;
    }
    if (updated) return { kind: 'assigned', row: updated };
    const [number] = await this.db
      .select({ assignedAgentId: phoneNumbers.assignedAgentId })
      .from(phoneNumbers)
      .where(and(eq(phoneNumbers.tenantId, tenantId), eq(phoneNumbers.id, id), eq(phoneNumbers.status, 'active')));
    if (!number) return { kind: 'number-not-found' };
    const [agent] = await agentOfTenant;
    if (!agent) return { kind: 'agent-not-found' };
    if (number.assignedAgentId && number.assignedAgentId !== agentId) return { kind: 'taken', assignedAgentId: number.assignedAgentId };
    // Unassigned (or ours) by now: another request changed it between the two statements.
    if (retry) return this.assign(tenantId, id, agentId, false);
    return number.assignedAgentId ? { kind: 'taken', assignedAgentId: number.assignedAgentId } : { kind: 'number-not-found' };
  }

  /** Clears the agent of an active number (a no-op when it has none); undefined when there is no such active number. */
  async unassign(tenantId: string, id: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await this.db
      .update(phoneNumbers)
      .set({ assignedAgentId: null })
      .where(and(eq(phoneNumbers.tenantId, tenantId), eq(phoneNumbers.id, id), eq(phoneNumbers.status, 'active')))
      .returning();
    return row;
  }

  /** The tenant's active number `id`, or undefined (released numbers are not active). */
  async findActive(tenantId: string, id: string): Promise<PhoneNumberRow | undefined> {
    const [row] = await this.db
      .select()
      .from(phoneNumbers)
      .where(and(eq(phoneNumbers.tenantId, tenantId), eq(phoneNumbers.id, id), eq(phoneNumbers.status, 'active')));
    return row;
  }

  /**
   * Marks an active number released at `at` and drops its assignment: it stops routing at
   * once (the inbound router reads only active numbers). False when it was not active.
   */
  async markReleased(tenantId: string, id: string, at: Date): Promise<boolean> {
    const rows = await this.db
      .update(phoneNumbers)
      .set({ status: 'released', releasedAt: at, assignedAgentId: null })
      .where(and(eq(phoneNumbers.tenantId, tenantId), eq(phoneNumbers.id, id), eq(phoneNumbers.status, 'active')))
      .returning({ id: phoneNumbers.id });
    return rows.length > 0;
  }

  /** Deletes a row this process has just inserted (the compensation path of a provisioning). */
  async deleteRow(id: string): Promise<void> {
    await this.db.delete(phoneNumbers).where(eq(phoneNumbers.id, id));
  }

  /**
   * Calls of `number` started in `[from, to]` and within the number's own life
   * (provisioned … released), so a number released and provisioned again keeps its
   * periods apart. A call belongs to the number by E.164 within the tenant: inbound calls
   * by `called_phone`, outbound calls by `caller_phone`. Minutes and cost count ended
   * calls only (a call in progress has neither yet); minutes are billed minutes.
   */
  async stats(number: PhoneNumberRow, from: Date, to: Date): Promise<NumberCallStats> {
    const c = conversations;
    const start = number.provisionedAt > from ? number.provisionedAt : from;
    const end = number.releasedAt && number.releasedAt < to ? number.releasedAt : to;
    const inbound = and(eq(c.direction, 'inbound'), eq(c.calledPhone, number.phoneNumber));
    const outbound = and(eq(c.direction, 'outbound'), eq(c.callerPhone, number.phoneNumber));
    const [row] = await this.db
      .select({
        inbound: sql<number>`count(*) filter (where ${inbound})::int`,
        outbound: sql<number>`count(*) filter (where ${outbound})::int`,
        minutes: sql<string | null>`sum(ceil(${c.durationSeconds} / 60.0))`,
        cost: sql<string | null>`sum(${c.costTotalUsd})`,
      })
      .from(c)
      .where(and(eq(c.tenantId, number.tenantId), sql`${c.startedAt} >= ${start.toISOString()}`, sql`${c.startedAt} <= ${end.toISOString()}`, or(inbound, outbound)));
    return {
      inboundCalls: row?.inbound ?? 0,
      outboundCalls: row?.outbound ?? 0,
      billedMinutes: Number(row?.minutes ?? 0),
      totalCostUsd: Number(row?.cost ?? 0),
    };
  }
}

function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  return e.code === '23503' || (e.cause !== undefined && isForeignKeyViolation(e.cause));
}
