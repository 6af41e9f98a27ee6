import { sql } from 'drizzle-orm';
import type { PlatformEvent } from '@vap/shared';
import type { Db } from '../../db/database.js';

/** Anything that runs SQL: the database or a transaction of it. */
export type SqlExecutor = Pick<Db, 'execute'>;

/** Postgres channel that tells every control plane's dispatcher new deliveries are due. */
export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/**
 * Writes events for webhook delivery in the transaction of the state change that caused
 * them, so an event exists exactly when its change committed: a crash before commit loses
 * both, a crash after loses neither (the dispatcher finds the rows on its next start).
 * One delivery row per enabled webhook of the event's agent subscribed to its kind; an
 * event nobody subscribed to is not stored.
 */
export class EventOutbox {
  private readonly listeners = new Set<() => void>();

  /** Calls `fn` on every `wake()` (the local dispatcher); returns the unsubscribe. */
  onWake(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Stages one event in `tx`; returns how many deliveries it created. */
  async stage(tx: SqlExecutor, event: PlatformEvent): Promise<number> {
    const body = JSON.stringify(event);
    const at = event.timestamp;
    const result = await tx.execute<{ n: number }>(sql`
      with targets as (
        select id from webhooks
         where tenant_id = ${event.tenantId} and agent_id = ${event.agentId} and enabled and ${event.type} = any(events)
      ), ev as (
        insert into webhook_events (id, tenant_id, agent_id, type, conversation_id, body, created_at)
        select ${event.id}, ${event.tenantId}, ${event.agentId}, ${event.type}, ${conversationIdOf(event)}, ${body}, ${at}::timestamptz
         where exists (select 1 from targets)
        returning id
      ), d as (
        insert into webhook_deliveries (webhook_id, event_id, tenant_id, event_type, status, next_attempt_at, created_at, updated_at)
        select t.id, ev.id, ${event.tenantId}, ${event.type}, 'pending', ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
          from targets t cross join ev
        returning 1
      )
      select count(*)::int as n from d`);
    const n = result.rows[0]?.n ?? 0;
    // Delivered to every listening control plane when the transaction commits.
    if (n > 0) await tx.execute(sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`);
    return n;
  }

  /** Wakes this process's dispatcher; call after the staging transaction committed. */
  wake(): void {
    for (const fn of this.listeners) fn();
  }
}

function conversationIdOf(event: PlatformEvent): string | null {
  const id = event.data['conversationId'];
  return typeof id === 'string' ? id : null;
}
