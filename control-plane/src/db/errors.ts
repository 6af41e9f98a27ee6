import { DrizzleQueryError } from 'drizzle-orm';

/** The Postgres error fields we branch on (a unique violation becomes 409, never 500). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.code === '23505') return constraint === undefined || e.constraint === constraint;
  // drizzle wraps driver errors; the original is the cause.
  return e.cause !== undefined && isUniqueViolation(e.cause, constraint);
}

/** SQLSTATEs of a server that cannot serve now: shutting down, crashed, starting up, or out of connection slots (class 08, connection exception, is matched by prefix). */
const UNAVAILABLE_SQLSTATES: ReadonlySet<string> = new Set(['57P01', '57P02', '57P03', '53300']);
/** Node socket errors of a server that cannot be reached (ENOENT counts only on `connect`: the embedded Postgres's Unix socket file is missing). */
const UNREACHABLE_ERRNOS: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
/** The messages pg (client.js) and pg-pool (index.js) give a lost or never-made connection; they carry no code. */
const UNAVAILABLE_MESSAGES: ReadonlySet<string> = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * Whether `err` says Postgres cannot be reached or cannot serve right now (stopped,
 * restarting, refusing connections, out of connection slots), rather than that the query
 * was wrong: the request then deserves 503 `unavailable` and a retry, not 500 `internal`.
 *
 * pg-pool rejects with the raw socket error (`ECONNREFUSED` from `connect`…) or one of its
 * own messages; drizzle wraps either in a DrizzleQueryError whose `cause` is the driver's
 * error, so the cause chain is walked (a few levels). The walk goes on only through drizzle's
 * wrapper and plain errors: a typed error of another layer (fetch's `TypeError: fetch failed`,
 * a carrier's or the embedder's error) owns its cause, and an `ECONNREFUSED` under it is
 * that service's outage, not the database's.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && e !== null && typeof e === 'object'; depth++) {
    const { code, syscall, message } = e as { code?: unknown; syscall?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (/^08[0-9A-Z]{3}$/.test(code) || UNAVAILABLE_SQLSTATES.has(code)) return true;
      if (UNREACHABLE_ERRNOS.has(code) || (code === 'ENOENT' && syscall === 'connect')) return true;
    }
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.has(message)) return true;
    if (!passesCauseOn(e)) return false;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Drizzle's query wrapper, a plain Error (pg-pool's timeout wrapper) or a non-Error object. */
function passesCauseOn(e: object): boolean {
  if (e instanceof DrizzleQueryError) return true;
  const proto: unknown = Object.getPrototypeOf(e);
  return proto === Error.prototype || proto === Object.prototype || proto === null;
}
