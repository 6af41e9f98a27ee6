/**
 * The simulator's side of one `multi-stream-input` socket (reference/tts.md §1.3): contexts
 * created by their first message, each with its own text buffer, chunk schedule and
 * generations in order; `close_context` ends a context after what was flushed (then
 * `{"isFinal": true, "contextId"}`), `close_socket` ends them all and closes 1000. Every
 * server message names its context (`contextId`), except the error for the whole socket.
 *
 * Choices where the reference is silent: a message without `context_id` goes to a context
 * named `default`; inactivity is counted for the socket (no message at all for
 * `inactivity_timeout` seconds closes it 1008), not per context; an error (fault) is sent
 * for no context and closes the socket 1008, as on `stream-input`.
 */
import type { WebSocket } from 'ws';
import { renderGeneration } from './sim-audio.js';
import type { SimSessionSetup } from './sim-session.js';

const DEFAULT_SCHEDULE = [120, 160, 250, 290];
/** About 200 ms of audio per `audio` message, like the real service's chunking. */
const CHUNK_MS = 200;
const DEFAULT_CONTEXT = 'default';

interface SimContext {
  id: string;
  buffer: string;
  schedule: number[];
  generationIndex: number;
  chain: Promise<void>;
  /** `close_context` came: no more text; what was flushed still plays. */
  closing: boolean;
  /** Nothing more is sent for it (its final went out, or the socket closed). */
  ended: boolean;
}

export class MultiSimSession {
  private readonly ws: WebSocket;
  private readonly setup: SimSessionSetup;
  private authenticated = false;
  private closed = false;
  private closingSocket = false;
  private readonly contexts = new Map<string, SimContext>();
  private inactivity: NodeJS.Timeout | null = null;
  private dropTimer: NodeJS.Timeout | null = null;
  private erroredOnce = false;

  constructor(ws: WebSocket, setup: SimSessionSetup) {
    this.ws = ws;
    this.setup = setup;
    ws.on('message', (data, isBinary) => this.onMessage(isBinary ? '' : data.toString()));
    ws.on('close', (code) => {
      this.closed = true;
      this.clearTimers();
      if (setup.record.closeCode === null) {
        setup.record.closeCode = code;
        setup.record.closedBy = 'client';
      }
    });
    ws.on('error', () => {});
    const dropAfterMs = setup.faults().dropAfterMs;
    if (dropAfterMs !== null) {
      this.dropTimer = setTimeout(() => {
        setup.record.closeCode = 1006;
        setup.record.closedBy = 'server';
        setup.tcp.destroy();
      }, dropAfterMs);
    }
    this.touch();
  }

  private onMessage(raw: string): void {
    if (this.closed) return;
    let msg: unknown = raw;
    try {
      msg = JSON.parse(raw);
    } catch {
      // recorded as text below
    }
    this.setup.record.messages.push(msg);
    this.touch();
    if (this.closingSocket) return;
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
      this.fail('invalid_input_message', 'Could not parse input message: expected a JSON object.');
      return;
    }
    const m = msg as Record<string, unknown>;
    if (m.close_socket === true) return this.closeSocket();
    const id = typeof m.context_id === 'string' && m.context_id.length > 0 ? m.context_id : DEFAULT_CONTEXT;
    if (!this.authenticated && !this.authenticate(m)) return;
    if (m.close_context === true) return this.closeContext(id);
    if (typeof m.text !== 'string') {
      this.fail('invalid_input_message', 'Could not parse input message: expected a string `text`, `close_context` or `close_socket`.');
      return;
    }
    let context = this.contexts.get(id);
    if (context === undefined || context.ended || context.closing) {
      // A new context, or an id used again: "not linked to the previous context with the same name" (§1.3).
      const created = this.createContext(id, m);
      if (created === null) return;
      context = created;
      if (m.text === ' ') return;
    }
    // An empty text without flush keeps the context alive; with flush it generates what is buffered.
    context.buffer += m.text;
    const threshold = context.schedule[Math.min(context.generationIndex, context.schedule.length - 1)]!;
    if (m.flush === true || context.buffer.length >= threshold) this.generate(context);
  }

  /** The key from the header or, without one, from the first message (`xi_api_key`/`xi-api-key`); 1008 when wrong. */
  private authenticate(m: Record<string, unknown>): boolean {
    const messageKey = typeof m.xi_api_key === 'string' ? m.xi_api_key : typeof m['xi-api-key'] === 'string' ? m['xi-api-key'] : undefined;
    const key = this.setup.headerKey ?? messageKey;
    if (key !== this.setup.apiKey || this.setup.faults().rejectAuth !== false) {
      this.closeWith(1008, key === undefined ? 'Authentication failed: no API key (send the xi-api-key header or xi_api_key)' : 'Authentication failed: invalid API key');
      return false;
    }
    this.authenticated = true;
    return true;
  }

  private createContext(id: string, m: Record<string, unknown>): SimContext | null {
    let schedule = DEFAULT_SCHEDULE;
    const config = m.generation_config as { chunk_length_schedule?: unknown } | undefined;
    const given = config?.chunk_length_schedule;
    if (given !== undefined) {
      if (!Array.isArray(given) || given.length === 0 || !given.every((n) => Number.isInteger(n) && n >= 50 && n <= 500)) {
        this.fail('invalid_input_message', 'generation_config.chunk_length_schedule values must be integers between 50 and 500.');
        return null;
      }
      schedule = given as number[];
    }
    const context: SimContext = { id, buffer: '', schedule, generationIndex: 0, chain: Promise.resolve(), closing: false, ended: false };
    this.contexts.set(id, context);
    this.setup.record.contexts.push(id);
    return context;
  }

  /** Ends a context once what was flushed has been generated; unflushed text is dropped. */
  private closeContext(id: string): void {
    const context = this.contexts.get(id);
    if (context === undefined || context.closing || context.ended) return;
    context.closing = true;
    context.buffer = '';
    this.enqueue(context, async () => {
      if (this.setup.faults().neverRespond) return;
      context.ended = true;
      if (this.contexts.get(id) === context) this.contexts.delete(id);
      this.sendJson({ isFinal: true, contextId: id });
    });
  }

  /** Every context's flushed text plays, each ends with its final, then close 1000. */
  private closeSocket(): void {
    this.closingSocket = true;
    const open = [...this.contexts.values()];
    for (const context of open) this.closeContext(context.id);
    void Promise.all(open.map((c) => c.chain)).then(() => this.closeWith(1000, ''));
  }

  /** Queues generation of everything buffered in `context`; blank buffers produce nothing. */
  private generate(context: SimContext): void {
    const text = context.buffer;
    context.buffer = '';
    if (text.trim().length === 0) return;
    context.generationIndex++;
    this.enqueue(context, async () => {
      const faults = this.setup.faults();
      if (faults.neverRespond) return;
      if (faults.errorMessage !== false) {
        const e = faults.errorMessage === true ? { error: 'quota_exceeded', message: 'This request exceeds your quota. You have 0 credits remaining.' } : faults.errorMessage;
        this.fail(e.error, e.message);
        return;
      }
      if (faults.firstByteDelayMs > 0) await new Promise((r) => setTimeout(r, faults.firstByteDelayMs));
      if (this.closed) return;
      const chunks = await renderGeneration(text, this.setup.format, CHUNK_MS);
      this.setup.record.generations.push(text);
      this.setup.record.charactersSynthesised += text.length;
      for (const chunk of chunks) {
        if (this.closed) return;
        this.sendJson({ audio: Buffer.from(chunk.audio).toString('base64'), isFinal: false, alignment: chunk.alignment, normalizedAlignment: chunk.alignment, contextId: context.id });
        // Yield between chunks so a client's close stops the generation.
        await new Promise((r) => setImmediate(r));
      }
    });
  }

  /** A context's generations run one at a time, so its audio arrives in text order. */
  private enqueue(context: SimContext, step: () => Promise<void>): void {
    context.chain = context.chain.then(() => (this.closed ? undefined : step())).catch(() => this.closeWith(1011, 'Internal error while generating audio'));
  }

  /** Error message (for no context) then close, as on `stream-input` (§1.2). */
  private fail(error: string, message: string): void {
    if (this.erroredOnce) return;
    this.erroredOnce = true;
    this.sendJson({ message, error, code: 1008 });
    this.closeWith(1008, message);
  }

  private touch(): void {
    if (this.inactivity !== null) clearTimeout(this.inactivity);
    const s = this.setup.inactivityTimeoutS;
    this.inactivity = setTimeout(() => {
      this.closeWith(1008, `Have not received a new text input within the timeout of ${s} seconds. Streaming input terminates the websocket connection after ${s} seconds of inactivity.`);
    }, s * 1000);
  }

  private sendJson(message: object): void {
    if (!this.closed && this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  private closeWith(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.setup.record.closeCode = code;
    this.setup.record.closedBy = 'server';
    // Close reasons are limited to 123 bytes by RFC 6455.
    this.ws.close(code, Buffer.from(reason).subarray(0, 123).toString());
  }

  private clearTimers(): void {
    if (this.inactivity !== null) clearTimeout(this.inactivity);
    if (this.dropTimer !== null) clearTimeout(this.dropTimer);
    this.inactivity = null;
    this.dropTimer = null;
  }
}
