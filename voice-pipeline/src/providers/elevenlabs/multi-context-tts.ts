/**
 * ElevenLabs streaming TTS over the `multi-stream-input` WebSocket (reference/tts.md §1.3):
 * one socket for the call, one context per agent turn, instead of a socket per turn
 * (`tts.ts`). Each turn then costs two messages on an open socket instead of a TCP (and, on
 * the real service, TLS) handshake, an upgrade and a close: measured in #5 (README
 * "Benchmarks"). `ws` rather than the SDK for the reason `tts.ts` gives.
 */
import { WebSocket } from 'ws';
import type { ProviderError } from '../provider-error.js';
import type { TtsEvent, TtsProvider, TtsStream, TtsStreamOptions } from '../types.js';
import { CHUNK_LENGTH_SCHEDULE, CLOSE_GRACE_MS, DEFAULT_MODEL, PROVIDER, abortError, closeError, connect, serviceError, tsError } from './connection.js';
import { EventQueue } from './event-queue.js';
import type { ElevenLabsTtsOptions } from './tts.js';
import { multiStreamInputPath, parseMultiServerMessage, toWebSocketBase, toWireVoiceSettings } from './wire.js';
import type { ServerMessage, WireInitMessage, WireMultiMessage } from './wire.js';

/**
 * Options as {@link ElevenLabsTtsOptions}; `inactivityTimeoutMs` defaults to the service's
 * longest, 180 s, because the socket also idles between the call's turns.
 */
export type ElevenLabsMultiContextTtsOptions = ElevenLabsTtsOptions;

const NEVER_ABORTED = new AbortController().signal;

/**
 * `TtsProvider` for ElevenLabs with one socket per provider (the registry makes one provider
 * per call) and one context per `open()`. The socket is opened by the first `open()` and
 * reopened by the next one after it closed (idle past `inactivity_timeout`, lost, or retired
 * after a stall) or when it is within a quarter of `inactivity_timeout` (at most 2 s) of the
 * service's idle close; a turn aborted while it connects leaves it connecting for the next.
 * Barge-in: aborting a turn's signal sends `close_context` and ends its `events` at once
 * without an error; audio the service still sends for that context is dropped. `close()`
 * (the call ended) sends `close_socket` and closes the socket.
 */
export class ElevenLabsMultiContextTts implements TtsProvider {
  readonly name = PROVIDER;
  private readonly opts: Required<Omit<ElevenLabsMultiContextTtsOptions, 'model'>> & { model: string };
  private socket: ContextSocket | null = null;
  private nextContext = 1;
  private closed = false;

  constructor(options: ElevenLabsMultiContextTtsOptions) {
    this.opts = {
      apiKey: options.apiKey,
      baseUrl: toWebSocketBase(options.baseUrl),
      model: options.model ?? DEFAULT_MODEL,
      firstByteTimeoutMs: options.firstByteTimeoutMs ?? 5000,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      inactivityTimeoutMs: options.inactivityTimeoutMs ?? 180_000,
    };
  }

  /**
   * A new context on the call's socket, connecting it first when there is none. Rejects as
   * `ElevenLabsTts.open` does (`tts.unauthorized`, `tts.http_<status>`, `tts.timeout`,
   * `tts.connection_failed`, an `AbortError`), or with `tts.closed` after `close()`.
   */
  async open(options: TtsStreamOptions, signal: AbortSignal): Promise<TtsStream> {
    if (signal.aborted) throw abortError();
    if (this.closed) throw tsError('tts.closed', 'the ElevenLabs provider of this call was closed', false);
    const inactivityTimeoutS = Math.min(180, Math.max(1, Math.ceil(this.opts.inactivityTimeoutMs / 1000)));
    const query = new URLSearchParams({ model_id: options.model ?? this.opts.model, output_format: options.outputFormat, inactivity_timeout: String(inactivityTimeoutS) });
    if (options.language !== undefined) query.set('language_code', options.language);
    const url = `${this.opts.baseUrl}${multiStreamInputPath(options.voiceId)}?${query.toString()}`;

    let socket = this.socket;
    // A socket about to reach inactivity_timeout is not reused: the service's close could cross
    // the new context's first message on the wire, failing the turn. The margin is a quarter of
    // the timeout, at most 2 s.
    const maxIdleMs = inactivityTimeoutS * 1000 - Math.min(2000, inactivityTimeoutS * 250);
    if (socket === null || socket.url !== url || !socket.usable || socket.idleMs() >= maxIdleMs) {
      // Other stream options (voice, format, language) need a socket of their own: the old one goes once its turns end.
      socket?.retire();
      const created = new ContextSocket(url, this.opts.apiKey, this.opts.connectTimeoutMs, () => {
        if (this.socket === created) this.socket = null;
      });
      this.socket = socket = created;
    }
    await socket.ready(signal);
    if (this.closed) throw tsError('tts.closed', 'the ElevenLabs provider of this call was closed', false);

    const init: WireInitMessage = { text: ' ', generation_config: { chunk_length_schedule: CHUNK_LENGTH_SCHEDULE } };
    if (options.voiceSettings !== undefined) init.voice_settings = toWireVoiceSettings(options.voiceSettings);
    return socket.openContext(`turn-${this.nextContext++}`, init, signal, { firstByteTimeoutMs: this.opts.firstByteTimeoutMs, keepAliveMs: (inactivityTimeoutS * 1000) / 2 });
  }

  /** The call ended: open contexts end silently, the socket is closed (`close_socket`). Later `open()`s reject. */
  close(): void {
    this.closed = true;
    this.socket?.close();
    this.socket = null;
  }
}

interface ContextTimings {
  firstByteTimeoutMs: number;
  keepAliveMs: number;
}

/** One `multi-stream-input` socket. State: connecting → open → closed; `retired`: no new contexts, closed once the last one ends. */
class ContextSocket {
  readonly url: string;
  private readonly ws: WebSocket;
  private readonly connecting: Promise<void>;
  private state: 'connecting' | 'open' | 'closed' = 'connecting';
  private retired = false;
  /** When a message last went out (or the socket opened): the service counts inactivity from there. */
  private lastSentAt = performance.now();
  private readonly contexts = new Map<string, ContextStream>();
  private readonly onGone: () => void;

  constructor(url: string, apiKey: string, connectTimeoutMs: number, onGone: () => void) {
    this.url = url;
    this.onGone = onGone;
    this.ws = new WebSocket(url, { headers: { 'xi-api-key': apiKey } });
    // `ws` emits 'error' after terminate() during the handshake; an unhandled 'error' would crash.
    this.ws.on('error', () => {});
    this.connecting = connect(this.ws, connectTimeoutMs, NEVER_ABORTED).then(
      () => {
        if (this.state === 'connecting') this.state = 'open';
        this.lastSentAt = performance.now();
      },
      (err: unknown) => {
        this.gone();
        throw err;
      },
    );
    // Every waiting open() sees the failure; none waiting must not make it unhandled.
    this.connecting.catch(() => {});
    this.ws.on('message', (data, isBinary) => {
      if (!isBinary) this.onMessage(data.toString());
    });
    this.ws.on('close', (code, reason) => this.onClose(code, reason.toString()));
  }

  get usable(): boolean {
    return this.state !== 'closed' && !this.retired;
  }

  /** Milliseconds since a message last went out on the open socket (0 while connecting). */
  idleMs(): number {
    return this.state === 'open' ? performance.now() - this.lastSentAt : 0;
  }

  /** Resolves once the socket is open; rejects with its connection failure, or an `AbortError` when `signal` aborts first. */
  ready(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(abortError());
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(abortError());
      signal.addEventListener('abort', onAbort, { once: true });
      this.connecting.then(
        () => {
          signal.removeEventListener('abort', onAbort);
          if (this.state === 'open') resolve();
          else reject(tsError('tts.connection_lost', 'ElevenLabs connection closed before the turn could start', true));
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  }

  openContext(id: string, init: WireInitMessage, signal: AbortSignal, timings: ContextTimings): TtsStream {
    const context = new ContextStream(this, id, signal, timings);
    this.contexts.set(id, context);
    context.start(init);
    return context;
  }

  send(message: WireMultiMessage): void {
    if (this.state === 'open' && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(message));
      this.lastSentAt = performance.now();
    }
  }

  /** A context ended (final, failure or abort): it gets nothing more. */
  release(id: string): void {
    this.contexts.delete(id);
    if (this.retired && this.contexts.size === 0) this.close();
  }

  /** No new contexts; closed once the open ones end (at once when there are none). */
  retire(): void {
    this.retired = true;
    this.onGone();
    if (this.contexts.size === 0) this.close();
  }

  close(): void {
    if (this.state === 'closed') return;
    const wasOpen = this.state === 'open';
    this.state = 'closed';
    this.gone();
    for (const context of [...this.contexts.values()]) context.drop();
    this.contexts.clear();
    const ws = this.ws;
    if (wasOpen && ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ close_socket: true } satisfies WireMultiMessage));
      ws.close(1000);
      // A peer that never answers the close frame must not keep the socket alive.
      setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
    } else {
      ws.terminate();
    }
  }

  private onMessage(text: string): void {
    if (this.state === 'closed') return;
    const { message, contextId } = parseMultiServerMessage(text);
    if (contextId !== null) {
      // Unknown ids are contexts that already ended (audio still under way at a barge-in).
      this.contexts.get(contextId)?.onServerMessage(message);
      return;
    }
    if (message.kind === 'error') {
      // An error for no context is the socket's (the close that follows ends it too).
      const error = serviceError(message.error, message.message);
      for (const context of [...this.contexts.values()]) context.failWith(error);
    }
  }

  private onClose(code: number, reason: string): void {
    const was = this.state;
    this.state = 'closed';
    this.gone();
    if (was === 'closed') return;
    // Closed with no turn under way (idle past inactivity_timeout, say): the next open() reconnects.
    for (const context of [...this.contexts.values()]) context.onSocketClosed(code, reason);
    this.contexts.clear();
  }

  private gone(): void {
    this.onGone();
  }
}

/** One turn's context. State: open → ending (`close_context` sent after the last text) → closed (final, failure or abort). */
class ContextStream implements TtsStream {
  private readonly queue: EventQueue<TtsEvent>;
  private state: 'open' | 'ending' | 'closed' = 'open';
  /** Text went out since the last flush, so a flush will produce audio worth waiting for. */
  private unflushedText = false;
  private watchdog: NodeJS.Timeout | null = null;
  private keepAlive: NodeJS.Timeout | null = null;
  private readonly onAbort = (): void => this.abort();

  constructor(
    private readonly socket: ContextSocket,
    private readonly id: string,
    private readonly signal: AbortSignal,
    private readonly timings: ContextTimings,
  ) {
    this.queue = new EventQueue<TtsEvent>(() => this.abort());
  }

  start(init: WireInitMessage): void {
    this.signal.addEventListener('abort', this.onAbort, { once: true });
    this.send({ ...init, context_id: this.id });
    if (this.signal.aborted) this.abort();
  }

  get events(): AsyncIterable<TtsEvent> {
    return this.queue;
  }

  sendText(text: string, opts?: { flush?: boolean }): void {
    if (this.state !== 'open') return;
    if (text.length === 0) {
      if (opts?.flush === true) this.flush();
      return;
    }
    if (text.trim().length > 0) this.unflushedText = true;
    // Each chunk ends with a space so the server never splits a word across chunks (reference/tts.md §1.1.2).
    const chunk = text.endsWith(' ') ? text : `${text} `;
    if (opts?.flush !== true) {
      this.send({ text: chunk, context_id: this.id });
      return;
    }
    this.send({ text: chunk, context_id: this.id, flush: true });
    this.flushed();
  }

  flush(): void {
    if (this.state !== 'open') return;
    // On this endpoint an empty text is never a close (§1.3): the flush carries none.
    this.send({ text: '', context_id: this.id, flush: true });
    this.flushed();
  }

  private flushed(): void {
    if (this.unflushedText) this.armWatchdog();
    this.unflushedText = false;
  }

  /** Text still buffered is flushed first: `close_context` keeps generating only what was flushed. */
  end(): void {
    if (this.state !== 'open') return;
    if (this.unflushedText) this.flush();
    this.send({ context_id: this.id, close_context: true });
    this.state = 'ending';
    this.clearKeepAlive();
    // After close_context the service always answers, at least with `isFinal` for the context.
    this.armWatchdog();
  }

  onServerMessage(msg: ServerMessage): void {
    if (this.state === 'closed') return;
    switch (msg.kind) {
      case 'audio':
        this.clearWatchdog();
        // After `end()` every silence until `isFinal` counts as a stall.
        if (this.state === 'ending') this.armWatchdog();
        this.queue.push({ type: 'audio', audio: msg.audio, alignment: msg.alignment });
        return;
      case 'final':
        this.queue.push({ type: 'final' });
        this.queue.end();
        this.shutdown();
        return;
      case 'error':
        this.failWith(serviceError(msg.error, msg.message));
        return;
      case 'ignored':
        return;
    }
  }

  onSocketClosed(code: number, reason: string): void {
    if (this.state === 'closed') return;
    if (code === 1000 && this.state === 'ending') {
      // Closed normally after our close_context without `isFinal`: all audio is in, so end as if final.
      this.queue.push({ type: 'final' });
      this.queue.end();
      this.shutdown();
      return;
    }
    this.failWith(closeError(code, reason));
  }

  failWith(error: ProviderError): void {
    if (this.state === 'closed') return;
    if (this.state === 'open') this.send({ context_id: this.id, close_context: true });
    this.queue.fail(error);
    this.shutdown();
  }

  /** The socket is closing under it (the call ended): end silently. */
  drop(): void {
    if (this.state === 'closed') return;
    this.queue.drop();
    this.shutdown();
  }

  private abort(): void {
    if (this.state === 'closed') return;
    // Barge-in: the service stops this context; what it already sent for it is dropped on arrival.
    if (this.state === 'open') this.send({ context_id: this.id, close_context: true });
    this.queue.drop();
    this.shutdown();
  }

  private shutdown(): void {
    this.state = 'closed';
    this.clearWatchdog();
    this.clearKeepAlive();
    this.signal.removeEventListener('abort', this.onAbort);
    this.socket.release(this.id);
  }

  private send(message: WireMultiMessage): void {
    this.socket.send(message);
    if (this.state === 'open') this.scheduleKeepAlive();
  }

  private armWatchdog(): void {
    if (this.watchdog !== null) return;
    const ms = this.timings.firstByteTimeoutMs;
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      // A socket that stalled one context is not trusted with the next turn (its retry included).
      this.socket.retire();
      this.failWith(tsError('tts.timeout', `no audio from ElevenLabs within ${ms} ms`, true));
    }, ms);
  }

  private clearWatchdog(): void {
    if (this.watchdog !== null) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  /** `{"text": "", "context_id"}` after `keepAliveMs` without sending, so a context opened ahead of a slow LLM survives `inactivity_timeout` (§1.3). */
  private scheduleKeepAlive(): void {
    this.clearKeepAlive();
    this.keepAlive = setTimeout(() => {
      this.keepAlive = null;
      if (this.state === 'open') this.send({ text: '', context_id: this.id });
    }, this.timings.keepAliveMs);
    this.keepAlive.unref();
  }

  private clearKeepAlive(): void {
    if (this.keepAlive !== null) clearTimeout(this.keepAlive);
    this.keepAlive = null;
  }
}
