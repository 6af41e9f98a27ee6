/** The Postgres error fields we branch on (a unique violation becomes 409, never 500). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.code === '23505') return constraint === undefined || e.constraint === constraint;
  // drizzle wraps driver errors; the original is the cause.
  return e.cause !== undefined && isUniqueViolation(e.cause, constraint);
}
