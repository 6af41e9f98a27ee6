/**
 * OpenAI Chat Completions adapter (reference/llm.md §1) on the official `openai` SDK.
 * It only translates: retries live in `withLlmRetry` (providers/retry.ts), so the SDK's
 * own retries are off.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ProviderError, abortError, isRetryableStatus } from '../provider-error.js';
import { httpFetch } from './http-fetch.js';
import type { LlmEvent, LlmMessage, LlmProvider, LlmRequest, LlmToolCall, ProviderConnection } from '../types.js';

/** Default for {@link OpenAiLlmOptions.timeoutMs}. */
export const OPENAI_LLM_DEFAULT_TIMEOUT_MS = 10_000;

export interface OpenAiLlmOptions extends ProviderConnection {
  /**
   * Longest wait, in ms, for the response headers and then between two streamed chunks.
   * A caller is waiting in silence meanwhile, so a stalled stream should fail over (via the
   * retry/fallback wrappers) rather than wait for the SDK's 10-minute default. Default 10 000.
   */
  timeoutMs?: number;
  /**
   * Which body field carries `LlmRequest.maxTokens`. OpenAI deprecated `max_tokens` in favour
   * of `max_completion_tokens` and rejects the old name on reasoning models, so that is the
   * default; OpenAI-compatible servers (vLLM, TGI, llama.cpp) mostly know only `max_tokens`
   * (llm.md §1.1, §3), so a `huggingface` endpoint should set this to `'max_tokens'`.
   */
  maxTokensField?: 'max_completion_tokens' | 'max_tokens';
  /** Reported as `LlmProvider.name` and `ProviderError.provider`. Default `openai`. */
  name?: string;
}

/**
 * Streams chat completions. `stream()` starts one HTTP request per call; events are
 * `text` deltas as they arrive (empty ones skipped), one `tool-call` per call once the
 * model finishes with `tool_calls`, then `usage` (from the final usage chunk; absent when a
 * compatible server sends none) and `done`.
 *
 * Cancellation is the caller's: aborting `signal` (barge-in) cancels the HTTP request at
 * once and the iterable rejects with an `AbortError`. Breaking out of the loop also
 * cancels the request. Failures reject with a {@link ProviderError} (capability `llm`).
 */
export class OpenAiLlm implements LlmProvider {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly timeoutMs: number;
  private readonly maxTokensField: 'max_completion_tokens' | 'max_tokens';

  constructor(opts: OpenAiLlmOptions) {
    this.name = opts.name ?? 'openai';
    this.timeoutMs = opts.timeoutMs ?? OPENAI_LLM_DEFAULT_TIMEOUT_MS;
    this.maxTokensField = opts.maxTokensField ?? 'max_completion_tokens';
    // Our baseUrl is the API root; the SDK wants the /v1 prefix. Accept a root that already has it.
    const root = opts.baseUrl.replace(/\/+$/, '');
    const baseURL = /\/v1$/.test(root) ? root : `${root}/v1`;
    // Over node:http rather than Node's fetch: a streamed reply costs about a third less CPU (http-fetch.ts).
    this.client = new OpenAI({ apiKey: opts.apiKey, baseURL, maxRetries: 0, timeout: this.timeoutMs, fetch: httpFetch });
  }

  stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<LlmEvent> {
    return this.run(request, signal);
  }

  private async *run(request: LlmRequest, signal: AbortSignal): AsyncGenerator<LlmEvent> {
    if (signal.aborted) throw abortError(signal);
    // One controller for the request: the caller's abort and our idle watchdog both end it.
    const controller = new AbortController();
    const onAbort = (): void => controller.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    let idleTimer: NodeJS.Timeout | undefined;
    let idleTimedOut = false;
    const armIdle = (): void => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        idleTimedOut = true;
        controller.abort();
      }, this.timeoutMs);
    };
    let requestId: string | undefined;
    /** The response was read to its end: the connection is back in the pool, nothing to cancel. */
    let bodyRead = false;
    const fail = (err: unknown): Error => {
      if (signal.aborted) return abortError(signal);
      if (idleTimedOut) return this.error('llm.timeout', `no data from OpenAI for ${this.timeoutMs} ms`, true, { requestId, cause: err });
      return this.toProviderError(err, requestId);
    };

    try {
      let stream: AsyncIterable<ChatCompletionChunk>;
      try {
        // The SDK's `timeout` covers connect + headers; from then on our idle watchdog does.
        const { data, request_id } = await this.client.chat.completions.create(toWireRequest(request, this.maxTokensField), { signal: controller.signal }).withResponse();
        stream = data;
        requestId = request_id ?? undefined;
      } catch (err) {
        throw fail(err);
      }

      const calls = new Map<number, LlmToolCall>();
      let finish: LlmFinish | null = null;
      let usage: LlmEvent | null = null;
      armIdle();
      try {
        for await (const chunk of stream) {
          const out: LlmEvent[] = [];
          for (const choice of chunk.choices) {
            if (choice.index !== 0) continue;
            const { delta } = choice;
            // A refusal is the model's answer to the caller, so it is spoken like content.
            const text = (delta.content ?? '') + (delta.refusal ?? '');
            if (text !== '') out.push({ type: 'text', text });
            for (const fragment of delta.tool_calls ?? []) collectToolCall(calls, fragment);
            if (choice.finish_reason) {
              finish = mapFinishReason(choice.finish_reason, calls.size > 0);
              if (finish === 'tool_calls') {
                for (const [, call] of [...calls].sort(([a], [b]) => a - b)) out.push({ type: 'tool-call', call: { ...call, arguments: call.arguments === '' ? '{}' : call.arguments } });
              }
            }
          }
          // OpenAI sends usage once, in a final chunk with no choices; some compatible servers repeat
          // it on every chunk, so keep the latest and report it once, just before done.
          if (chunk.usage) usage = { type: 'usage', inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
          // The watchdog times the provider, not our consumer: pause it while we are suspended in yield.
          clearTimeout(idleTimer);
          yield* out;
          armIdle();
        }
      } catch (err) {
        throw fail(err);
      }
      bodyRead = true;
      // The SDK ends the iteration quietly when its request is aborted, so look at why it ended.
      if (signal.aborted || idleTimedOut) throw fail(undefined);
      if (finish === null) throw this.error('llm.connection_lost', 'OpenAI stream ended without a finish_reason', true, { requestId });
      if (usage) yield usage;
      yield { type: 'done', finishReason: finish };
    } finally {
      clearTimeout(idleTimer);
      signal.removeEventListener('abort', onAbort);
      // Cancels the socket on early exit. Not after a complete response: aborting builds a
      // DOMException (a stack trace) here and one more in the SDK, per turn (#5 profile).
      if (!bodyRead) controller.abort();
    }
  }

  private error(code: string, message: string, retryable: boolean, extra: { status?: number; requestId?: string; cause?: unknown } = {}): ProviderError {
    return new ProviderError({ provider: this.name, capability: 'llm', code, message, retryable, ...extra });
  }

  private toProviderError(err: unknown, streamRequestId: string | undefined): ProviderError {
    if (err instanceof ProviderError) return err;
    const message = err instanceof Error ? err.message : String(err);
    // Subclass order matters: a timeout is a connection error, and both are APIErrors.
    if (err instanceof APIConnectionTimeoutError) return this.error('llm.timeout', `OpenAI request timed out after ${this.timeoutMs} ms`, true, { requestId: streamRequestId, cause: err });
    if (err instanceof APIConnectionError) return this.error('llm.connection_lost', `OpenAI connection failed: ${message}`, true, { requestId: streamRequestId, cause: err });
    if (err instanceof APIError) {
      const requestId = err.requestID ?? streamRequestId;
      const status = err.status;
      // No status: the SDK raised an `error` event that arrived inside a 200 stream (llm.md §1.2).
      if (status === undefined) return this.error('llm.stream_error', `OpenAI stream error: ${message}`, true, { requestId, cause: err });
      const code = status === 401 ? 'llm.unauthorized' : status === 429 ? 'llm.rate_limited' : `llm.http_${status}`;
      return this.error(code, `OpenAI answered ${message}`, isRetryableStatus(status), { status, requestId, cause: err });
    }
    if (err instanceof SyntaxError) return this.error('llm.stream_error', `OpenAI sent a malformed event: ${message}`, true, { requestId: streamRequestId, cause: err });
    // A connection reset while reading the body (node:http's "aborted", ECONNRESET; undici's "terminated" under fetch): the connection dropped.
    return this.error('llm.connection_lost', `OpenAI stream failed: ${message}`, true, { requestId: streamRequestId, cause: err });
  }
}

type LlmFinish = Extract<LlmEvent, { type: 'done' }>['finishReason'];

function mapFinishReason(reason: string, hasToolCalls: boolean): LlmFinish {
  switch (reason) {
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'stop':
    case 'eos_token': // older TGI (llm.md §3)
      // Some compatible servers finish a tool call with "stop"; the calls are still complete.
      return hasToolCalls ? 'tool_calls' : 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

/** Tool-call fragments are keyed by index; the first carries id and name, later ones argument pieces (llm.md §1.2). */
function collectToolCall(calls: Map<number, LlmToolCall>, fragment: ChatCompletionChunk.Choice.Delta.ToolCall): void {
  let call = calls.get(fragment.index);
  if (!call) {
    call = { id: '', name: '', arguments: '' };
    calls.set(fragment.index, call);
  }
  if (fragment.id && !call.id) call.id = fragment.id;
  if (fragment.function?.name && !call.name) call.name = fragment.function.name;
  call.arguments += fragment.function?.arguments ?? '';
  if (!call.id) call.id = `call_${fragment.index}`; // some compatible servers omit ids
}

/** Our request → the Chat Completions body. Undefined settings are left out, so the server's defaults apply. */
export function toWireRequest(request: LlmRequest, maxTokensField: 'max_completion_tokens' | 'max_tokens' = 'max_completion_tokens'): ChatCompletionCreateParamsStreaming {
  return {
    model: request.model,
    messages: request.messages.map(toWireMessage),
    ...(request.tools?.length ? { tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) } : {}),
    temperature: request.temperature,
    top_p: request.topP,
    frequency_penalty: request.frequencyPenalty,
    presence_penalty: request.presencePenalty,
    ...(request.maxTokens !== undefined ? { [maxTokensField]: request.maxTokens } : {}),
    ...(request.responseFormat
      ? { response_format: { type: 'json_schema' as const, json_schema: { name: request.responseFormat.name, schema: request.responseFormat.schema, strict: true } } }
      : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}

export function toWireMessage(m: LlmMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case 'system':
      return { role: 'system', content: m.content };
    case 'user':
      return { role: 'user', content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    case 'assistant': {
      const calls = m.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: m.content ?? '' }; // the API wants content unless there are tool calls
      return {
        role: 'assistant',
        content: m.content,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
      };
    }
  }
}
