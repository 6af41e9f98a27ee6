import type pg from 'pg';

/** The throttle's numbers (see docs/api.md "Login sessions"). */
export interface LoginThrottlePolicy {
  /** Failures within {@link windowMs} that lock one account (key `email:<lower email>`). */
  accountMaxFailures: number;
  /** Failures within {@link windowMs} that lock one client address (key `ip:<addr>`). */
  addressMaxFailures: number;
  /** Window in which failures are counted (ms). */
  windowMs: number;
  /** How long a lock lasts (ms). */
  lockMs: number;
}

/** Whether a login attempt may go ahead. */
export type ThrottleVerdict =
  | { allowed: true; ticket: ThrottleTicket }
  | { allowed: false; /** Seconds until the longest lock ends. */ retryAfterSec: number };

/** What {@link LoginThrottle.begin} counted, to settle once the password was checked. */
export interface ThrottleTicket {
  accountKey: string;
  addressKey: string;
  /** Keys this attempt locked (its own failure was the one that tipped them). */
  lockedByThis: string[];
}

interface Row {
  key: string;
  failures: number;
  window_started_at: Date;
  locked_until: Date | null;
}

/**
 * Throttles password logins in `login_throttles`, per account (email, whether or not it
 * exists) and per client address, shared by every control plane.
 *
 * Each attempt is counted as a failure *before* the password is checked ({@link begin}),
 * so parallel guesses cannot slip past the limit while argon2 runs; a success then takes
 * it back ({@link succeeded}). When a key reaches its limit within the window it is locked
 * for `lockMs`, and its window restarts when the lock ends: the first attempt after a lock
 * is allowed, and if it fails the key locks again at once. So after the first few failures
 * a guesser gets one try per lock period. While a key is locked every attempt is refused
 * (429 `account-locked`), a correct password included, and nothing is counted.
 */
export class LoginThrottle {
  constructor(
    private readonly pool: pg.Pool,
    private readonly policy: LoginThrottlePolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /** The throttle key of an account: its email, lowercased. */
  static accountKey(email: string): string {
    return `email:${email.trim().toLowerCase()}`;
  }

  /** Checks the locks and counts this attempt as a failure of both keys, atomically. */
  async begin(email: string, ip: string): Promise<ThrottleVerdict> {
    const accountKey = LoginThrottle.accountKey(email);
    const addressKey = `ip:${ip}`;
    const limits = new Map([
      [accountKey, this.policy.accountMaxFailures],
      [addressKey, this.policy.addressMaxFailures],
    ]);
    const keys = [...limits.keys()].sort();
    const nowMs = this.now();
    const now = new Date(nowMs);
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      await client.query('insert into login_throttles (key, failures, window_started_at) select k, 0, $2 from unnest($1::text[]) k on conflict (key) do nothing', [keys, now]);
      // Locked in key order, so two logins never wait on each other's rows in a cycle.
      const res = await client.query<Row>('select key, failures, window_started_at, locked_until from login_throttles where key = any($1) order by key for update', [keys]);
      const locked = res.rows.filter((r) => r.locked_until !== null && r.locked_until.getTime() > nowMs);
      if (locked.length > 0) {
        await client.query('commit');
        const untilMs = Math.max(...locked.map((r) => r.locked_until!.getTime()));
        return { allowed: false, retryAfterSec: Math.max(1, Math.ceil((untilMs - nowMs) / 1000)) };
      }
      const lockedByThis: string[] = [];
      for (const r of res.rows) {
        const fresh = r.window_started_at.getTime() + this.policy.windowMs <= nowMs;
        const failures = (fresh ? 0 : r.failures) + 1;
        const windowStart = fresh ? now : r.window_started_at;
        if (failures >= limits.get(r.key)!) {
          const until = new Date(nowMs + this.policy.lockMs);
          lockedByThis.push(r.key);
          // The window restarts when the lock ends: one more failure soon after locks again.
          await client.query('update login_throttles set failures = $2, window_started_at = $3, locked_until = $3 where key = $1', [r.key, failures, until]);
        } else {
          await client.query('update login_throttles set failures = $2, window_started_at = $3 where key = $1', [r.key, failures, windowStart]);
        }
      }
      await client.query('commit');
      return { allowed: true, ticket: { accountKey, addressKey, lockedByThis } };
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * A successful login: the account's count is cleared; the address gets its counted
   * attempt back (a busy office must not lock itself out by logging in), and a lock that
   * this very attempt set is lifted.
   */
  async succeeded(ticket: ThrottleTicket): Promise<void> {
    await this.pool.query(
      `with acc as (delete from login_throttles where key = $1)
       update login_throttles set failures = greatest(failures - 1, 0), locked_until = case when $3 then null else locked_until end where key = $2`,
      [ticket.accountKey, ticket.addressKey, ticket.lockedByThis.includes(ticket.addressKey)],
    );
  }
}
