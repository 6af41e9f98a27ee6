import type pg from 'pg';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * An `in_progress` row older than this belongs to a request whose process died (a live
 * request answers well within it: the slowest POST today is a few hundred ms); a new
 * request with the same key may then take it over instead of getting 409 for 24 h.
 */
export const ABANDONED_AFTER_MS = 60_000;

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; status: number; body: string; contentType: string };

/** Idempotency records in Postgres, per tenant and key. */
export class IdempotencyStore {
  constructor(private readonly pool: pg.Pool) {}

  /**
   * Claims `key` for a request with `requestHash`, or says why not. The insert is the
   * lock: of two concurrent requests exactly one inserts the row.
   */
  async claim(tenantId: string, key: string, requestHash: string): Promise<Claim> {
    const inserted = await this.pool.query(
      `insert into idempotency_keys (tenant_id, key, request_hash, state, expires_at)
       values ($1, $2, $3, 'in_progress', now() + make_interval(secs => $4))
       on conflict (tenant_id, key) do update
         set request_hash = excluded.request_hash, state = 'in_progress', created_at = now(), expires_at = excluded.expires_at,
             response_status = null, response_body = null, response_content_type = null
         where idempotency_keys.expires_at <= now()
            or (idempotency_keys.state = 'in_progress' and idempotency_keys.created_at < now() - make_interval(secs => $5))
       returning 1`,
      [tenantId, key, requestHash, IDEMPOTENCY_TTL_MS / 1000, ABANDONED_AFTER_MS / 1000],
    );
    if ((inserted.rowCount ?? 0) > 0) return { kind: 'claimed' };
    const res = await this.pool.query<{ request_hash: string; state: string; response_status: number | null; response_body: string | null; response_content_type: string | null }>(
      'select request_hash, state, response_status, response_body, response_content_type from idempotency_keys where tenant_id = $1 and key = $2',
      [tenantId, key],
    );
    const row = res.rows[0];
    // Deleted between the two statements (the first request failed and released it): try once more.
    if (!row) return this.claim(tenantId, key, requestHash);
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.state === 'in_progress') return { kind: 'in_progress' };
    return { kind: 'replay', status: row.response_status!, body: row.response_body ?? '', contentType: row.response_content_type ?? 'application/json' };
  }

  async complete(tenantId: string, key: string, status: number, body: string, contentType: string): Promise<void> {
    await this.pool.query(
      `update idempotency_keys set state = 'completed', response_status = $3, response_body = $4, response_content_type = $5
        where tenant_id = $1 and key = $2`,
      [tenantId, key, status, body, contentType],
    );
  }

  /** Forgets a claim whose request failed on our side, so the client's retry runs again. */
  async release(tenantId: string, key: string): Promise<void> {
    await this.pool.query(`delete from idempotency_keys where tenant_id = $1 and key = $2 and state = 'in_progress'`, [tenantId, key]);
  }

  /** Deletes expired records; returns how many. */
  async purgeExpired(): Promise<number> {
    const res = await this.pool.query('delete from idempotency_keys where expires_at <= now()');
    return res.rowCount ?? 0;
  }
}
