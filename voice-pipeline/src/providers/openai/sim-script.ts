/**
 * The OpenAI simulator's request validation and scripted replies, kept apart from the
 * HTTP plumbing in simulator.ts. Wire shapes follow reference/llm.md §1.
 */
import { knowledgeReply } from './sim-knowledge.js';
import { contentText } from './tokens.js';

/** A message as it arrives on the wire (only the fields the simulator reads). */
export interface SimWireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id?: string; type?: string; function?: { name?: string; arguments?: string } }[];
  tool_call_id?: string;
}

/** What a reply rule tests: a case-insensitive substring, or a regular expression. */
export type ReplyMatch = string | RegExp;

/**
 * A scripted reply, matched against the last user message. A `toolCall` rule is skipped
 * once a tool result follows that user message, so the conversation moves on to the
 * model's answer instead of calling the tool forever. A rule with `times` answers that
 * many requests and is then removed (`{ match: '', reply, times: 1 }` forces the next
 * reply, e.g. a structured reply that breaks its schema). A `reply` is sent verbatim as
 * the message content, also when the request asked for a `response_format`.
 */
export type ReplyRule =
  | { match: ReplyMatch; reply: string; times?: number }
  | { match: ReplyMatch; toolCall: { name: string; arguments: Record<string, unknown> }; times?: number };

/** What the simulator will send for one request, before `max_tokens` truncation. */
export type PlannedReply = { kind: 'text'; text: string } | { kind: 'tool-call'; name: string; arguments: string };

/** OpenAI's error body (reference/llm.md §1.2 "Errors"). */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function errorBody(message: string, type: string, param: string | null = null, code: string | null = null): OpenAiErrorBody {
  return { error: { message, type, param, code } };
}

/**
 * The built-in default reply: `You said: <last user message>.`, or `Done: <content>` when
 * the last message is a tool result (the model "summarising" what the tool returned), or,
 * when a "Relevant knowledge" system message came with the request (RAG in calls),
 * `According to our information: <the passage sentence sharing most words with the question>`.
 */
export function defaultOpenAiReply(messages: readonly SimWireMessage[]): string {
  const last = messages.at(-1);
  if (last?.role === 'tool') return `Done: ${contentText(last.content)}`;
  const question = lastUserText(messages);
  return knowledgeReply(messages, question) ?? `You said: ${question}.`;
}

export function lastUserText(messages: readonly SimWireMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'user') return contentText(m.content);
  }
  return '';
}

function matches(match: ReplyMatch, text: string): boolean {
  if (typeof match === 'string') return text.toLowerCase().includes(match.toLowerCase());
  match.lastIndex = 0; // a /g or /y regex keeps state between test() calls
  return match.test(text);
}

/** The first rule that answers these messages, or null. */
export function matchRule(messages: readonly SimWireMessage[], rules: readonly ReplyRule[]): ReplyRule | null {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const userText = lastUser >= 0 ? contentText(messages[lastUser]?.content) : '';
  const toolAnswered = messages.slice(lastUser + 1).some((m) => m.role === 'tool');
  return rules.find((rule) => matches(rule.match, userText) && !('toolCall' in rule && toolAnswered)) ?? null;
}

/** What a rule sends. */
export function ruleReply(rule: ReplyRule): PlannedReply {
  return 'toolCall' in rule ? { kind: 'tool-call', name: rule.toolCall.name, arguments: JSON.stringify(rule.toolCall.arguments) } : { kind: 'text', text: rule.reply };
}

/** First matching rule wins; otherwise `fallback(messages)`. */
export function planReply(messages: readonly SimWireMessage[], rules: readonly ReplyRule[], fallback: (messages: readonly SimWireMessage[]) => string): PlannedReply {
  const rule = matchRule(messages, rules);
  return rule ? ruleReply(rule) : { kind: 'text', text: fallback(messages) };
}

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

const RANGES: [param: string, min: number, max: number, integer: boolean][] = [
  ['temperature', 0, 2, false],
  ['top_p', 0, 1, false],
  ['frequency_penalty', -2, 2, false],
  ['presence_penalty', -2, 2, false],
  ['max_tokens', 1, Number.MAX_SAFE_INTEGER, true],
  ['max_completion_tokens', 1, Number.MAX_SAFE_INTEGER, true],
];

const invalid = (param: string, message: string, code: string | null = null): OpenAiErrorBody => errorBody(message, 'invalid_request_error', param, code);

/**
 * Checks a `POST /v1/chat/completions` body the way the API does for the fields we send,
 * returning OpenAI's 400 body (with `param` naming the field) or null when it is valid.
 */
export function validateChatBody(body: unknown): OpenAiErrorBody | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return errorBody('Invalid request body: expected a JSON object.', 'invalid_request_error');
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') return invalid('model', 'you must provide a model parameter');
  if (b.messages === undefined) return invalid('messages', "Missing required parameter: 'messages'.", 'missing_required_parameter');
  if (!Array.isArray(b.messages)) return invalid('messages', "Invalid type for 'messages': expected an array of objects.", 'invalid_type');
  if (b.messages.length === 0) return invalid('messages', "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'empty_array');
  const callIds = new Set<string>();
  for (const [i, raw] of b.messages.entries()) {
    const p = `messages[${i}]`;
    if (typeof raw !== 'object' || raw === null) return invalid(p, `Invalid type for '${p}': expected an object.`, 'invalid_type');
    const m = raw as SimWireMessage;
    if (!ROLES.includes(m.role)) return invalid(`${p}.role`, `Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`, 'invalid_value');
    const hasCalls = Array.isArray(m.tool_calls) && m.tool_calls.length > 0;
    if (m.content === undefined || m.content === null) {
      if (!(m.role === 'assistant' && hasCalls)) return invalid(`${p}.content`, `Missing required parameter: '${p}.content'.`, 'missing_required_parameter');
    } else if (typeof m.content !== 'string' && !Array.isArray(m.content)) {
      return invalid(`${p}.content`, `Invalid type for '${p}.content': expected one of a string or array of objects.`, 'invalid_type');
    }
    if (m.role === 'assistant' && m.tool_calls !== undefined) {
      if (!Array.isArray(m.tool_calls)) return invalid(`${p}.tool_calls`, `Invalid type for '${p}.tool_calls': expected an array.`, 'invalid_type');
      for (const [j, call] of m.tool_calls.entries()) {
        if (typeof call?.id !== 'string' || call.type !== 'function' || typeof call.function?.name !== 'string' || typeof call.function.arguments !== 'string') {
          return invalid(`${p}.tool_calls[${j}]`, `Invalid '${p}.tool_calls[${j}]': expected { id, type: 'function', function: { name, arguments } } with string arguments.`, 'invalid_value');
        }
        callIds.add(call.id);
      }
    }
    if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string') return invalid(`${p}.tool_call_id`, `Missing required parameter: '${p}.tool_call_id'.`, 'missing_required_parameter');
      // The API rejects a tool result that answers no earlier assistant tool call.
      if (!callIds.has(m.tool_call_id)) return invalid(`${p}.role`, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.");
    }
  }
  for (const [param, min, max, integer] of RANGES) {
    const v = b[param];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || (integer && !Number.isInteger(v))) return invalid(param, `Invalid type for '${param}': expected ${integer ? 'an integer' : 'a decimal'}.`, 'invalid_type');
    if (v < min) return invalid(param, `Invalid '${param}': value below minimum. Expected a value >= ${min}, but got ${v} instead.`, 'below_min_value');
    if (v > max) return invalid(param, `Invalid '${param}': value above maximum. Expected a value <= ${max}, but got ${v} instead.`, 'above_max_value');
  }
  if (b.tools !== undefined) {
    if (!Array.isArray(b.tools)) return invalid('tools', "Invalid type for 'tools': expected an array.", 'invalid_type');
    for (const [i, tool] of (b.tools as { type?: unknown; function?: { name?: unknown } }[]).entries()) {
      if (tool?.type !== 'function' || typeof tool.function?.name !== 'string') return invalid(`tools[${i}].function.name`, `Missing required parameter: 'tools[${i}].function.name'.`, 'missing_required_parameter');
    }
  }
  if (b.stream_options !== undefined && b.stream_options !== null && b.stream !== true) {
    return invalid('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  }
  return null;
}

/** OpenAI's error body for a status the simulator was told to fail with. */
export function faultBody(status: number, model: string): OpenAiErrorBody {
  if (status === 429) {
    return errorBody(`Rate limit reached for ${model} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.`, 'requests', 'requests', 'rate_limit_exceeded');
  }
  if (status === 500) return errorBody('The server had an error while processing your request. Sorry about that!', 'server_error');
  if (status === 503) return errorBody('The engine is currently overloaded, please try again later.', 'server_error');
  if (status === 401) return errorBody('Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key');
  return errorBody(`Simulated error (status ${status}).`, status >= 500 ? 'server_error' : 'invalid_request_error');
}
