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
import { SimSocket } from './sim-socket.js';
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

export class MultiSimSession extends SimSocket {
  private authenticated = false;
  private closingSocket = false;
  private readonly contexts = new Map<string, SimContext>();

  protected onClientMessage(msg: unknown): void {
    if (this.closingSocket) return;
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
      this.fail('invalid_input_message', 'Could not parse input message: expected a JSON object.');
      return;
    }
    const m = msg as Record<string, unknown>;
    if (m.close_socket === true) return this.closeSocket();
    const id = typeof m.context_id === 'string' && m.context_id.length > 0 ? m.context_id : DEFAULT_CONTEXT;
    if (!this.authenticated) {
      if (!this.authenticate(m)) return;
      this.authenticated = true;
    }
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

  private createContext(id: string, m: Record<string, unknown>): SimContext | null {
    const schedule = this.scheduleOf(m);
    if (schedule === null) return null;
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
    this.enqueue(context, () => this.speak(text, context.id));
  }

  /** A context's generations run one at a time, so its audio arrives in text order. */
  private enqueue(context: SimContext, step: () => Promise<void>): void {
    context.chain = context.chain.then(() => (this.closed ? undefined : step())).catch(() => this.closeWith(1011, 'Internal error while generating audio'));
  }
}
