import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';

/**
 * Response serialization without re-validation, for hot routes whose handlers build the body
 * from rows the service already validated on write (the agents: every stored configuration went
 * through the agent schema).
 *
 * fastify-type-provider-zod's serializer runs `schema.safeParse(body)` on every response and
 * stringifies the result: on a GET by id that parse was ~10 % of the request's CPU. What the
 * parse contributes to the *output* of an already valid body is only its shape: keys in schema
 * order, unknown keys gone, and defaults filled in where a field is missing (agents stored before
 * a field existed). A shaper compiled once per schema does exactly that and nothing else; the
 * body is then `JSON.stringify`ed as before. Schemas using anything the shaper does not model
 * (unions, pipes, transforms, ...) keep the zod serializer.
 */

type Shaper = (value: unknown) => unknown;

interface ZodInternals {
  _zod: { def: Record<string, unknown> & { type: string } };
}

const identity: Shaper = (v) => v;

/** Types whose parse output equals a valid input. */
const LEAVES = new Set(['string', 'number', 'int', 'boolean', 'bigint', 'enum', 'literal', 'null', 'unknown', 'any', 'nan', 'date']);

/** A shaper for `schema`, or null when it uses a construct the shaper does not model. */
export function compileShaper(schema: z.ZodType): Shaper | null {
  const def = (schema as unknown as Partial<ZodInternals>)._zod?.def;
  if (!def) return null;
  switch (def.type) {
    case 'object': {
      // Strict (catchall never) and stripping (no catchall) objects drop unknown keys; loose ones keep them.
      const catchall = def.catchall as Partial<ZodInternals> | undefined;
      if (catchall && catchall._zod?.def.type !== 'never') return null;
      const shape = def.shape as Record<string, z.ZodType>;
      const keys: string[] = [];
      const shapers: Shaper[] = [];
      for (const [key, inner] of Object.entries(shape)) {
        const s = compileShaper(inner);
        if (!s) return null;
        keys.push(key);
        shapers.push(s);
      }
      const n = keys.length;
      return (value) => {
        if (typeof value !== 'object' || value === null) return value;
        const input = value as Record<string, unknown>;
        const out: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) {
          const v = shapers[i]!(input[keys[i]!]);
          // zod keeps a key whose result is undefined only when the input had it; JSON drops it anyway.
          if (v !== undefined) out[keys[i]!] = v;
        }
        return out;
      };
    }
    case 'array': {
      const s = compileShaper(def.element as z.ZodType);
      if (!s) return null;
      if (s === identity) return identity;
      return (value) => (Array.isArray(value) ? value.map(s) : value);
    }
    case 'record': {
      const s = compileShaper(def.valueType as z.ZodType);
      if (!s) return null;
      if (s === identity) return identity;
      return (value) => {
        if (typeof value !== 'object' || value === null) return value;
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, s(v)]));
      };
    }
    case 'optional':
    case 'nullable': {
      const s = compileShaper(def.innerType as z.ZodType);
      if (!s) return null;
      if (s === identity) return identity;
      return (value) => (value === undefined || value === null ? value : s(value));
    }
    case 'default': {
      const s = compileShaper(def.innerType as z.ZodType);
      if (!s) return null;
      // zod 4 returns the default as it is (no parse of it) when the input is undefined. Read
      // once: the getter clones it on every read (~2.5 µs), and the result is only stringified.
      const fallback = def.defaultValue as unknown;
      return (value) => (value === undefined ? fallback : s(value));
    }
    default:
      return LEAVES.has(def.type) ? identity : null;
  }
}

/**
 * A route-level `serializerCompiler`: schemas the shaper models are shaped and stringified;
 * the others (the problem responses, anything exotic) go through the zod serializer. A body
 * marked with {@link immutableBody} has its JSON computed once per object and kept while the
 * object lives.
 */
const immutableBodies = new WeakSet<object>();

/**
 * Marks a response body that never changes (its producer froze it all the way down, e.g. an
 * unchanged agent's view): the trusted serializer keeps its JSON by identity. An explicit mark,
 * not `Object.isFrozen`: a shallowly frozen object elsewhere must not have stale JSON reused.
 */
export function immutableBody<T extends object>(body: T): T {
  immutableBodies.add(body);
  return body;
}

export const trustedSerializerCompiler: typeof zodSerializerCompiler = (route) => {
  const shaper = compileShaper(route.schema as z.ZodType);
  if (!shaper) return zodSerializerCompiler(route);
  const frozenBodies = new WeakMap<object, string>();
  return (data: unknown) => {
    if (typeof data !== 'object' || data === null || !immutableBodies.has(data)) return JSON.stringify(shaper(data));
    let json = frozenBodies.get(data);
    if (json === undefined) {
      json = JSON.stringify(shaper(data));
      frozenBodies.set(data, json);
    }
    return json;
  };
};
