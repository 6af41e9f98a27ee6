const NUL = '\u0000';
const REPLACEMENT = '\ufffd';
/** A UTF-16 surrogate not paired with its other half (`\ud800` alone in JSON): no Unicode character. */
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;

/**
 * Why Postgres cannot store `s` as text or inside `jsonb`, as a field's message (the rule it
 * breaks), or null when it can: a NUL (U+0000), which neither type holds, or an unpaired
 * surrogate, which `jsonb` refuses as an escape (`\ud800`) and UTF-8 cannot encode.
 */
export function unstorableTextReason(s: string): string | null {
  if (s.includes(NUL)) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must be well-formed Unicode: a surrogate (\\ud800-\\udfff) must be half of a pair';
  return null;
}

/** `s` with each NUL and unpaired surrogate replaced by U+FFFD (itself when it has none). */
export function storableString(s: string): string {
  let out = s.includes(NUL) ? s.replaceAll(NUL, REPLACEMENT) : s;
  if (LONE_SURROGATE.test(out)) out = out.replace(LONE_SURROGATES, REPLACEMENT);
  return out;
}

/**
 * `value` with {@link storableString} applied to every string and object key: text Postgres
 * can store (it refuses a NUL in `text` and `jsonb`, and an unpaired surrogate in `jsonb`,
 * with an error that would lose the whole row: a call's message, its end record). For text
 * that comes from outside and must be kept rather than refused: provider and tool output
 * relayed by a gateway, an LLM's analysis, a document's text. Returns `value` itself when
 * nothing needs replacing; otherwise copies only the objects and arrays on the way to what
 * does. Plain data (JSON-shaped) only.
 */
export function storableText<T>(value: T): T {
  return replace(value, 0) as T;
}

/** Deeper than any payload we store; past it, values are left as they are (the database decides). */
const MAX_DEPTH = 64;

function replace(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return storableString(value);
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH || ArrayBuffer.isView(value) || value instanceof Date) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = replace(value[i], depth + 1);
      if (v !== value[i]) (copy ??= value.slice())[i] = v;
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | null = null;
  for (const [key, v0] of Object.entries(value)) {
    const v = replace(v0, depth + 1);
    const k = storableString(key);
    if (v === v0 && k === key) continue;
    copy ??= { ...(value as Record<string, unknown>) };
    if (k !== key) delete copy[key];
    copy[k] = v;
  }
  return copy ?? value;
}
