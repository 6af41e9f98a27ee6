import { sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { gatewayHeartbeats } from '../../db/schema/conversations.js';
import { DEFAULT_LOST_CALL_RULES } from '../conversations/call-service.js';

/**
 * Whether the media gateways take new calls, as their last heartbeats say (gateway_heartbeats,
 * written by whichever control plane took each heartbeat). A gateway counts while its last
 * heartbeat is younger than the watchdog's `staleFactor` of its interval, as the watchdog
 * judges it alive.
 */
export class GatewayIntake {
  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
    private readonly staleFactor: number = DEFAULT_LOST_CALL_RULES.staleFactor,
  ) {}

  /**
   * True when at least one gateway is alive and every gateway alive drains (shuts down and
   * refuses new streams): a call connected now would be refused at the stream. False when one
   * takes calls, and when none was heard from (this control plane cannot tell then: gateways
   * may be starting, or their heartbeats not reach it; the call is connected as before).
   */
  async allDraining(): Promise<boolean> {
    const at = new Date(this.now()).toISOString();
    const h = gatewayHeartbeats;
    const [row] = await this.db
      .select({ alive: sql<number>`count(*)::int`, draining: sql<number>`(count(*) filter (where ${h.draining}))::int` })
      .from(h)
      .where(sql`${h.lastSeenAt} >= ${at}::timestamptz - (${h.intervalMs} * ${this.staleFactor}::numeric) * interval '1 millisecond'`);
    return row !== undefined && row.alive > 0 && row.draining === row.alive;
  }
}
