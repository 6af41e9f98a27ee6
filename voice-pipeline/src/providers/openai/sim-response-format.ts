/**
 * The OpenAI simulator's handling of `response_format` (Chat Completions structured
 * outputs): the API's checks on the parameter and on a strict JSON schema, and the
 * content the simulator answers with when no scripted rule takes precedence.
 */
import { ANALYSIS_SCHEMA_NAME, analysisReply, sampleOfSchema } from './sim-analysis.js';
import type { SimJsonSchema } from './sim-analysis.js';
import { errorBody } from './sim-script.js';
import type { OpenAiErrorBody, SimWireMessage } from './sim-script.js';
import { contentText } from './tokens.js';

/** A `response_format` the simulator accepted. */
export type SimResponseFormat = { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name: string; schema: SimJsonSchema; strict: boolean };

type Checked = { format: SimResponseFormat | null; error: null } | { format: null; error: OpenAiErrorBody };

const invalid = (param: string, message: string, code: string | null = null): Checked => ({ format: null, error: errorBody(message, 'invalid_request_error', param, code) });

/**
 * Checks `response_format` as the API does for what we use: the type, the json_schema's
 * name (`^[a-zA-Z0-9_-]{1,64}$`) and schema, and, with `strict: true`, the strict subset
 * (an object root; every object lists all its properties in `required` and sets
 * `additionalProperties: false`). `json_object` needs the word "json" in the messages.
 */
export function checkResponseFormat(body: { response_format?: unknown; messages: readonly SimWireMessage[] }): Checked {
  const rf = body.response_format;
  if (rf === undefined || rf === null) return { format: null, error: null };
  if (typeof rf !== 'object' || Array.isArray(rf)) return invalid('response_format', "Invalid type for 'response_format': expected an object.", 'invalid_type');
  const r = rf as { type?: unknown; json_schema?: unknown };
  if (r.type === 'text') return { format: { type: 'text' }, error: null };
  if (r.type === 'json_object') {
    const mentionsJson = body.messages.some((m) => /json/i.test(contentText(m.content)));
    if (!mentionsJson) return invalid('messages', "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.");
    return { format: { type: 'json_object' }, error: null };
  }
  if (r.type !== 'json_schema') return invalid('response_format.type', `Invalid value: '${String(r.type)}'. Supported values are: 'json_object', 'json_schema', and 'text'.`, 'invalid_value');
  if (typeof r.json_schema !== 'object' || r.json_schema === null) return invalid('response_format.json_schema', "Missing required parameter: 'response_format.json_schema'.", 'missing_required_parameter');
  const js = r.json_schema as { name?: unknown; schema?: unknown; strict?: unknown };
  if (typeof js.name !== 'string') return invalid('response_format.json_schema.name', "Missing required parameter: 'response_format.json_schema.name'.", 'missing_required_parameter');
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(js.name)) {
    return invalid('response_format.json_schema.name', "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", 'invalid_value');
  }
  const schema = (js.schema ?? {}) as SimJsonSchema;
  const strict = js.strict === true;
  if (strict) {
    const problem = strictProblem(schema, []);
    if (problem) return invalid('response_format', `Invalid schema for response_format '${js.name}': ${problem}`);
  }
  return { format: { type: 'json_schema', name: js.name, schema, strict }, error: null };
}

function strictProblem(schema: SimJsonSchema, path: string[]): string | null {
  const context = `In context=(${path.map((p) => `'${p}'`).join(', ')})`;
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (path.length === 0 && (types.length !== 1 || types[0] !== 'object')) {
    return `schema must be a JSON Schema of 'type: "object"', got 'type: "${types.join('", "') || 'none'}"'.`;
  }
  if (types.includes('object') || schema.properties) {
    if (schema.additionalProperties !== false) return `${context}, 'additionalProperties' is required to be supplied and to be false.`;
    const keys = Object.keys(schema.properties ?? {});
    const required = Array.isArray(schema.required) ? schema.required : null;
    const missing = keys.filter((k) => !required?.includes(k));
    if (!required || missing.length > 0) return `${context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0] ?? ''}'.`;
    for (const [k, sub] of Object.entries(schema.properties ?? {})) {
      const p = strictProblem(sub, [...path, 'properties', k]);
      if (p) return p;
    }
  }
  if (schema.items) {
    const p = strictProblem(schema.items, [...path, 'items']);
    if (p) return p;
  }
  for (const [i, sub] of (schema.anyOf ?? []).entries()) {
    const p = strictProblem(sub, [...path, 'anyOf', String(i)]);
    if (p) return p;
  }
  return null;
}

/**
 * The content for a structured request no rule answered: a derived analysis for the
 * `conversation_analysis` schema, a minimal value of any other schema, `{}` for json_object.
 */
export function structuredContent(format: Exclude<SimResponseFormat, { type: 'text' }>, messages: readonly SimWireMessage[]): string {
  if (format.type === 'json_object') return '{}';
  if (format.name === ANALYSIS_SCHEMA_NAME) return JSON.stringify(analysisReply(messages, format.schema));
  return JSON.stringify(sampleOfSchema(format.schema));
}
