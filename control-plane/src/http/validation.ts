import type { FastifySchemaCompiler } from 'fastify';
import type { ZodType, z } from 'zod';
import type { FieldError } from '@vap/shared';

/**
 * A request that failed its schema. `missing` is true when a required field or parameter
 * is absent: that is a 400 (the spec's "missing required parameters"); everything else
 * that is well-formed but wrong is a 422.
 */
export class RequestValidationError extends Error {
  statusCode: number;
  validationContext?: string;
  constructor(
    readonly errors: FieldError[],
    readonly missing: boolean,
  ) {
    super(errors.map((e) => `${e.field || '(body)'}: ${e.message}`).join('; '));
    this.name = 'RequestValidationError';
    this.statusCode = missing ? 400 : 422;
  }
}

type Issue = z.core.$ZodIssue;

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = data;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** States the rule an issue broke, in words a caller can act on. */
export function messageFor(issue: Issue, data: unknown): string {
  // A message set in the schema is the rule in its own words; zod's defaults start "Invalid".
  if (issue.message && !/^(Invalid|Too (small|big)|Unrecognized)/.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type': {
      const got = valueAt(data, issue.path);
      if (issue.path.length === 0 && (data === null || data === undefined)) return 'a JSON body is required';
      if (got === undefined) return 'is required';
      return `must be ${issue.expected === 'int' ? 'an integer' : `of type ${issue.expected}`}, got ${describeType(got)}`;
    }
    case 'invalid_value':
      return `must be one of: ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'too_small':
      if (issue.origin === 'string') return `must be at least ${String(issue.minimum)} characters`;
      if (issue.origin === 'array') return `must have at least ${String(issue.minimum)} items`;
      return `must be ${issue.inclusive ? 'at least' : 'greater than'} ${String(issue.minimum)}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${String(issue.maximum)} characters`;
      if (issue.origin === 'array') return `must have at most ${String(issue.maximum)} items`;
      return `must be ${issue.inclusive ? 'at most' : 'less than'} ${String(issue.maximum)}`;
    case 'invalid_format':
      return `must be a valid ${issue.format}`;
    case 'unrecognized_keys':
      return 'is not a known field';
    default:
      return issue.message;
  }
}

/** Flattens zod issues into `{field, message}` with dotted paths; unknown keys each get their own entry. */
export function toFieldErrors(issues: readonly Issue[], data: unknown, prefix: PropertyKey[] = []): { errors: FieldError[]; missing: boolean } {
  const errors: FieldError[] = [];
  let missing = false;
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) errors.push({ field: [...path, key].join('.'), message: 'is not a known field' });
      continue;
    }
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // Report the branch that got furthest, not "Invalid input".
      const best = [...issue.errors].sort((a, b) => b.length - a.length)[0]!;
      const nested = toFieldErrors(best, data, []);
      errors.push(...nested.errors);
      missing ||= nested.missing;
      continue;
    }
    const absent = issue.path.length === 0 ? data === null || data === undefined : valueAt(data, issue.path) === undefined;
    if (issue.code === 'invalid_type' && absent) missing = true;
    errors.push({ field: path.join('.'), message: messageFor(issue, data) });
  }
  return { errors, missing };
}

/** Fastify validator compiler for zod schemas: the one place request input is checked. */
export const validatorCompiler: FastifySchemaCompiler<ZodType> =
  ({ schema }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    const { errors, missing } = toFieldErrors(result.error.issues, data);
    return { error: new RequestValidationError(errors, missing) };
  };
