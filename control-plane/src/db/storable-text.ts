const NUL = '\u0000';
const REPLACEMENT = '\ufffd';

/**
 * `value` with every U+0000 in its strings and object keys replaced by U+FFFD, which
 * Postgres can store (it refuses NUL in `text` and in `jsonb` with an error that would lose
 * the whole row: a call's message, its end record). For text that comes from outside and
 * must be kept rather than refused: provider and tool output relayed by a gateway. Returns
 * `value` itself when it has no NUL; otherwise copies only the objects and arrays on the way
 * to one. Plain data (JSON-shaped) only.
 */
export function storableText<T>(value: T): T {
  return replaceNul(value, 0) as T;
}

/** Deeper than any payload we store; past it, values are left as they are (the database decides). */
const MAX_DEPTH = 64;

function replaceNul(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.includes(NUL) ? value.replaceAll(NUL, REPLACEMENT) : value;
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH || ArrayBuffer.isView(value) || value instanceof Date) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = replaceNul(value[i], depth + 1);
      if (v !== value[i]) (copy ??= value.slice())[i] = v;
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | null = null;
  for (const [key, v0] of Object.entries(value)) {
    const v = replaceNul(v0, depth + 1);
    const k = key.includes(NUL) ? key.replaceAll(NUL, REPLACEMENT) : key;
    if (v === v0 && k === key) continue;
    copy ??= { ...(value as Record<string, unknown>) };
    if (k !== key) delete copy[key];
    copy[k] = v;
  }
  return copy ?? value;
}
