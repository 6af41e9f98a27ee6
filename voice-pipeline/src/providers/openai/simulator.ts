/**
 * A protocol-faithful OpenAI Chat Completions and Embeddings server on loopback
 * (reference/llm.md §1, §2 and §7): Bearer auth, OpenAI's error JSON, real SSE with the exact
 * chunk shapes, scripted replies, deterministic embeddings (sim-embeddings.ts), and faults
 * on demand. Tests, sandbox mode and load tests point the real SDK at it with `baseUrl: sim.url`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import { defaultOpenAiReply, errorBody, faultBody, matchRule, ruleReply, validateChatBody, type OpenAiErrorBody, type PlannedReply, type ReplyRule, type SimWireMessage } from './sim-script.js';
import { checkResponseFormat, structuredContent } from './sim-response-format.js';
import { countPromptTokens, splitTokens } from './tokens.js';
import { answerEmbeddings } from './sim-embeddings.js';

export { countPromptTokens, countTextTokens, splitTokens } from './tokens.js';
export type { ReplyMatch, ReplyRule, SimWireMessage } from './sim-script.js';
export { ANALYSIS_SCHEMA_NAME } from './sim-analysis.js';
export { OPENAI_EMBEDDING_DIMENSIONS, SIM_DEFAULT_EMBEDDING_DIMENSIONS } from './sim-embeddings.js';

/** Latency and failures the simulator applies to the next requests. All times in ms. */
export interface OpenAiSimFaults {
  /** Delay between the response headers and the first chunk (time to first token); an embeddings answer waits this long too. */
  firstTokenDelayMs: number;
  /** Delay between consecutive tokens (and tool-argument fragments). */
  interTokenDelayMs: number;
  /** Answer the next `count` requests (chat or embeddings) with this HTTP status and OpenAI's error JSON. */
  failNext: { status: number; count: number } | null;
  /** After this many tokens, send `data: {"error":…}` and end the response. */
  midStreamErrorAfterTokens: number | null;
  /** After this many tokens, destroy the socket without finishing the response. */
  dropAfterTokens: number | null;
  /** Read the request and never answer it. */
  hang: boolean;
  /** Embedding vectors of this many dimensions whatever the model and request say (a server that changed model under us). */
  embeddingDimensions: number | null;
}

export const DEFAULT_OPENAI_SIM_FAULTS: Readonly<OpenAiSimFaults> = Object.freeze({
  firstTokenDelayMs: 30,
  interTokenDelayMs: 5,
  failNext: null,
  midStreamErrorAfterTokens: null,
  dropAfterTokens: null,
  hang: false,
  embeddingDimensions: null,
});

/** One request the simulator received, as it was on the wire. */
export interface OpenAiSimRequest {
  method: string;
  path: string;
  /** Lower-cased header names (`authorization`, `content-type`, …). */
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
  /** HTTP status answered, or null while hanging. */
  status: number | null;
  /** The whole response was written (`[DONE]` for a stream; false after a mid-stream error or drop). */
  completed: boolean;
  /** The client closed the connection before the response was complete. */
  clientDisconnected: boolean;
}

type Answer = (status: number, body: unknown, headers?: Record<string, string>) => void;

interface StreamPlan {
  plan: PlannedReply;
  /** Tokens (or argument fragments) to send, already cut at max tokens. */
  sent: string[];
  finishReason: string;
  usage: object;
  /** Fields every chunk repeats: id, created, model, system_fingerprint. */
  base: object;
  callId: string;
  faults: OpenAiSimFaults;
  includeUsage: boolean;
}

const FaultsPatch = z
  .object({
    firstTokenDelayMs: z.number().int().min(0),
    interTokenDelayMs: z.number().int().min(0),
    failNext: z.object({ status: z.number().int().min(400).max(599), count: z.number().int().min(0) }).nullable(),
    midStreamErrorAfterTokens: z.number().int().min(0).nullable(),
    dropAfterTokens: z.number().int().min(0).nullable(),
    hang: z.boolean(),
    embeddingDimensions: z.number().int().min(1).max(8192).nullable(),
  })
  .partial()
  .strict();

const Match = z.union([z.string(), z.object({ regex: z.string(), flags: z.string().optional() }).strict()]);
const Times = z.number().int().min(1).optional();
const RulesBody = z.array(
  z.union([
    z.object({ match: Match, reply: z.string(), times: Times }).strict(),
    z.object({ match: Match, toolCall: z.object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) }).strict(), times: Times }).strict(),
  ]),
);

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' };

/**
 * OpenAI Chat Completions simulator. `start()` listens on 127.0.0.1 (port 0 = any free
 * port); `close()` drops every open connection and pending timer, so no test leaks a
 * socket. Controls are methods here and, for other processes, `/__sim/*` on the same port.
 */
export class OpenAiSimulator {
  /** API root without `/v1`, e.g. `http://127.0.0.1:43121`. */
  readonly url: string;
  readonly apiKey: string;
  /** Every `/v1/*` request in arrival order (control requests are not recorded). */
  readonly requests: OpenAiSimRequest[] = [];
  /** Reply used when no rule matches; `reset()` restores the built-in echo. */
  defaultReply: (messages: readonly SimWireMessage[]) => string = defaultOpenAiReply;

  private rules: ReplyRule[] = [];
  private faults: OpenAiSimFaults = { ...DEFAULT_OPENAI_SIM_FAULTS };
  private readonly sleeps = new Set<() => void>();
  private closed = false;
  private callCounter = 0;
  private writeCounter = 0;
  /** Responses the simulator itself cut off (dropAfterTokens): not a client disconnect. */
  private readonly dropped = new WeakSet<ServerResponse>();

  private constructor(
    private readonly server: Server,
    apiKey: string,
  ) {
    this.apiKey = apiKey;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  static async start(opts: { port?: number; apiKey?: string } = {}): Promise<OpenAiSimulator> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    const sim = new OpenAiSimulator(server, opts.apiKey ?? 'sk-sim-test');
    // Small SSE writes must leave as their own TCP segments, or split events would merge.
    server.on('connection', (socket: Socket) => socket.setNoDelay(true));
    server.on('request', (req, res) => {
      sim.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody(`Simulator failure: ${String(err)}`, 'server_error'));
        else res.destroy();
      });
    });
    return sim;
  }

  /** Append a reply rule; rules are tried in insertion order, first match wins. */
  addReply(rule: ReplyRule): void {
    this.rules.push({ ...rule });
  }

  /** Put a rule before all others (a one-off override: `{ match: '', reply, times: 1 }`). */
  addReplyFirst(rule: ReplyRule): void {
    this.rules.unshift({ ...rule });
  }

  clearReplies(): void {
    this.rules = [];
  }

  /** Merge into the current faults; `failNext.count` counts down per request (chat or embeddings). */
  setFaults(patch: Partial<OpenAiSimFaults>): void {
    this.faults = { ...this.faults, ...patch };
  }

  resetFaults(): void {
    this.faults = { ...DEFAULT_OPENAI_SIM_FAULTS };
  }

  /** Faults currently in force (a copy). */
  currentFaults(): OpenAiSimFaults {
    return { ...this.faults };
  }

  /** Back to a fresh simulator: no rules, default faults and reply, no recorded requests. */
  reset(): void {
    this.clearReplies();
    this.resetFaults();
    this.defaultReply = defaultOpenAiReply;
    this.requests.length = 0;
  }

  /** Stops listening, destroys open connections (hanging requests included) and wakes pending delays. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const wake of this.sleeps) wake();
    const done = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await done;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const raw = await readBody(req);
    if (path.startsWith('/__sim/')) return this.control(req.method ?? 'GET', path, raw, res);
    res.setHeader('x-request-id', `req_${randomBytes(12).toString('hex')}`);
    if (req.method === 'POST' && path === '/v1/chat/completions') return this.chat(req, res, raw, path);
    if (req.method === 'POST' && path === '/v1/embeddings') return this.embeddings(req, res, raw, path);
    sendJson(res, 404, errorBody(`Invalid URL (${req.method ?? 'GET'} ${path})`, 'invalid_request_error'));
  }

  /**
   * What chat and embeddings share: the request log, Bearer auth, JSON parsing and `failNext`.
   * Answers and returns null when the request ends here, else the parsed body and the
   * request's fault snapshot.
   */
  private admit(req: IncomingMessage, res: ServerResponse, raw: string, path: string): { record: OpenAiSimRequest; answer: Answer; body: unknown; faults: OpenAiSimFaults } | null {
    const record: OpenAiSimRequest = { method: 'POST', path, headers: { ...req.headers }, body: raw, status: null, completed: false, clientDisconnected: false };
    this.requests.push(record);
    res.on('close', () => {
      if (!record.completed && !this.dropped.has(res)) record.clientDisconnected = true;
    });
    const answer: Answer = (status, body, headers = {}) => {
      record.status = status;
      sendJson(res, status, body, headers);
      record.completed = true;
    };

    const auth = req.headers.authorization;
    if (auth === undefined) {
      answer(401, errorBody("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", 'invalid_request_error'));
      return null;
    }
    if (auth !== `Bearer ${this.apiKey}`) {
      answer(401, errorBody(`Incorrect API key provided: ${redactKey(auth.replace(/^Bearer\s+/i, ''))}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', null, 'invalid_api_key'));
      return null;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      answer(400, errorBody('We could not parse the JSON body of your request. (HINT: This likely means you aren\'t using your HTTP library correctly. The OpenAI API expects a JSON payload.)', 'invalid_request_error'));
      return null;
    }
    record.body = body;
    const faults = { ...this.faults };
    if (faults.failNext && faults.failNext.count > 0) {
      const { status } = faults.failNext;
      this.faults.failNext = faults.failNext.count > 1 ? { status, count: faults.failNext.count - 1 } : null;
      const model = typeof (body as { model?: unknown }).model === 'string' ? (body as { model: string }).model : 'gpt-4o-mini';
      answer(status, faultBody(status, model), status === 429 ? { 'retry-after': '1', 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s' } : {});
      return null;
    }
    return { record, answer, body, faults };
  }

  private async embeddings(req: IncomingMessage, res: ServerResponse, raw: string, path: string): Promise<void> {
    const admitted = this.admit(req, res, raw, path);
    if (admitted === null) return;
    const { answer, body, faults } = admitted;
    const outcome = answerEmbeddings(body, faults.embeddingDimensions);
    if (outcome.status !== 200) return answer(outcome.status, outcome.body);
    if (faults.hang) return; // the client's timeout or sim.close() ends it
    await this.sleep(faults.firstTokenDelayMs);
    answer(200, outcome.body);
  }

  private async chat(req: IncomingMessage, res: ServerResponse, raw: string, path: string): Promise<void> {
    const admitted = this.admit(req, res, raw, path);
    if (admitted === null) return;
    const { record, answer, body, faults } = admitted;
    const invalid = validateChatBody(body);
    if (invalid) return answer(400, invalid);
    const b = body as { model: string; messages: SimWireMessage[]; stream?: boolean; stream_options?: { include_usage?: boolean } | null; max_tokens?: number | null; max_completion_tokens?: number | null; response_format?: unknown };
    const format = checkResponseFormat(b);
    if (format.error) return answer(400, format.error);
    if (faults.hang) return; // the client's timeout or sim.close() ends it

    const rule = matchRule(b.messages, this.rules);
    if (rule?.times !== undefined && --rule.times <= 0) this.rules.splice(this.rules.indexOf(rule), 1);
    const structured = format.format && format.format.type !== 'text' ? format.format : null;
    const plan: PlannedReply = rule ? ruleReply(rule) : { kind: 'text', text: structured ? structuredContent(structured, b.messages) : this.defaultReply(b.messages) };
    const limit = b.max_completion_tokens ?? b.max_tokens ?? Infinity;
    const callId = `call_sim${++this.callCounter}`;
    // Text streams word by word; tool arguments in 8-char fragments, like the API's small pieces.
    const pieces = plan.kind === 'text' ? splitTokens(plan.text) : (plan.arguments.match(/[\s\S]{1,8}/g) ?? []);
    const sent = pieces.slice(0, limit);
    const finishReason = sent.length < pieces.length ? 'length' : plan.kind === 'text' ? 'stop' : 'tool_calls';
    const usage = { prompt_tokens: countPromptTokens(b.messages), completion_tokens: sent.length, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const base = { id: `chatcmpl-sim${randomBytes(8).toString('hex')}`, created: Math.floor(Date.now() / 1000), model: b.model, system_fingerprint: 'fp_sim' };

    if (b.stream !== true) {
      await this.sleep(faults.firstTokenDelayMs);
      if (res.destroyed) return;
      const message =
        plan.kind === 'text'
          ? { role: 'assistant', content: sent.join(''), refusal: null }
          : { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: callId, type: 'function', function: { name: plan.name, arguments: sent.join('') } }] };
      return answer(200, { ...base, object: 'chat.completion', choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }], usage });
    }

    record.status = 200;
    record.completed = await this.streamReply(res, { plan, sent, finishReason, usage, base, callId, faults, includeUsage: b.stream_options?.include_usage === true });
  }

  /**
   * Streams a planned reply as SSE chunks (llm.md §1.2), applying the request's fault
   * snapshot. Resolves true once `[DONE]` is written, false if the stream was cut short.
   */
  private async streamReply(res: ServerResponse, r: StreamPlan): Promise<boolean> {
    const { plan, sent, finishReason, usage, base, callId, faults, includeUsage } = r;
    // With include_usage every chunk carries "usage": null except the final usage chunk (llm.md §1.2).
    const chunk = (choices: unknown[], u: unknown = null) => ({ ...base, object: 'chat.completion.chunk', choices, ...(includeUsage ? { usage: u } : {}) });
    const choice = (delta: unknown, finish: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finish });
    const live = () => !res.destroyed && !this.closed;

    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    await this.sleep(faults.firstTokenDelayMs);
    if (!live()) return false;
    // The API opens with a role chunk (content "" for text; for a tool call it also carries
    // the call's id, type and name with empty arguments), then deltas (llm.md §1.2).
    const opening =
      plan.kind === 'text'
        ? { role: 'assistant', content: '', refusal: null }
        : { role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: plan.name, arguments: '' } }] };
    await this.writeEvent(res, chunk([choice(opening)]));
    for (let i = 0; i <= sent.length; i++) {
      if (i > 0) await this.sleep(faults.interTokenDelayMs);
      if (!live()) return false;
      if (faults.midStreamErrorAfterTokens === i) {
        await this.writeEvent(res, errorBody('The server had an error while processing your request. Sorry about that!', 'server_error'));
        res.end();
        return false;
      }
      if (faults.dropAfterTokens === i) {
        this.dropped.add(res);
        res.socket?.destroy();
        return false;
      }
      if (i === sent.length) break;
      const piece = sent[i] ?? '';
      await this.writeEvent(res, chunk([choice(plan.kind === 'text' ? { content: piece } : { tool_calls: [{ index: 0, function: { arguments: piece } }] })]));
    }
    await this.writeEvent(res, chunk([choice({}, finishReason)]));
    if (includeUsage) await this.writeEvent(res, chunk([], usage));
    if (!live()) return false;
    res.end('data: [DONE]\n\n');
    return true;
  }

  /**
   * Writes one SSE event. Every third event goes out in two TCP writes (split mid-JSON or
   * between the two newlines) so client parsers must buffer across chunks (llm.md §7).
   */
  private async writeEvent(res: ServerResponse, payload: unknown): Promise<void> {
    if (res.destroyed) return;
    const text = `data: ${JSON.stringify(payload)}\n\n`;
    const n = this.writeCounter++;
    if (n % 3 !== 2) {
      res.write(text);
      return;
    }
    const at = n % 2 === 0 ? Math.floor(text.length / 2) : text.length - 1;
    res.write(text.slice(0, at));
    await new Promise((resolve) => setImmediate(resolve));
    if (!res.destroyed) res.write(text.slice(at));
  }

  private async control(method: string, path: string, raw: string, res: ServerResponse): Promise<void> {
    const json = (): unknown => (raw === '' ? {} : JSON.parse(raw));
    try {
      if (method === 'GET' && path === '/__sim/health') return sendJson(res, 200, { status: 'ok' });
      if (method === 'GET' && path === '/__sim/requests') return sendJson(res, 200, this.requests);
      if (method === 'POST' && path === '/__sim/reset') {
        this.reset();
        return sendJson(res, 200, { ok: true });
      }
      if (method === 'POST' && path === '/__sim/faults') {
        this.setFaults(FaultsPatch.parse(json()) as Partial<OpenAiSimFaults>);
        return sendJson(res, 200, this.currentFaults());
      }
      if (method === 'POST' && path === '/__sim/replies') {
        const parsed = json();
        for (const r of RulesBody.parse(Array.isArray(parsed) ? parsed : [parsed])) {
          const match = typeof r.match === 'string' ? r.match : new RegExp(r.match.regex, r.match.flags);
          const times = r.times === undefined ? {} : { times: r.times };
          this.addReply('reply' in r ? { match, reply: r.reply, ...times } : { match, toolCall: r.toolCall, ...times });
        }
        return sendJson(res, 200, { ok: true, rules: this.rules.length });
      }
    } catch (err) {
      return sendJson(res, 400, { error: err instanceof z.ZodError ? z.prettifyError(err) : String(err) });
    }
    sendJson(res, 404, { error: `unknown control route ${method} ${path}` });
  }

  /** A delay that `close()` cuts short, so no timer outlives the simulator. */
  private sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleeps.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleeps.add(wake);
    });
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown | OpenAiErrorBody, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The API echoes a wrong key with its middle masked. */
function redactKey(key: string): string {
  return key.length <= 8 ? '***' : `${key.slice(0, 3)}***${key.slice(-4)}`;
}
