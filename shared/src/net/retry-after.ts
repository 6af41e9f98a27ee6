/**
 * The wait a `Retry-After` value asks for, ms (RFC 9110 §10.2.3): delay-seconds (a whole
 * number), or an HTTP-date (the time until then, 0 once it is past). Undefined when absent,
 * empty or neither: a caller then uses its own backoff rather than retrying at once. An
 * HTTP-date always names its day and month, and the letter check keeps V8's `Date.parse`
 * from reading junk such as "-1" or "1.5" as a date in 2001.
 */
export function retryAfterMs(value: string | null | undefined, now: number = Date.now()): number | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = /[a-z]/i.test(v) ? Date.parse(v) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
