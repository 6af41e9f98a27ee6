/**
 * ElevenLabs streaming TTS over the `multi-stream-input` WebSocket (reference/tts.md §1.3):
 * one socket for the call, one context per agent turn, instead of a socket per turn
 * (`tts.ts`). Each turn then costs two messages on an open socket instead of a TCP (and, on
 * the real service, TLS) handshake, an upgrade and a close: measured in #5 (README
 * "Benchmarks"). `ws` rather than the SDK for the reason `tts.ts` gives.
 */
import { WebSocket } from 'ws';
import type { TtsProvider, TtsStream, TtsStreamOptions } from '../types.js';
import { CHUNK_LENGTH_SCHEDULE, CLOSE_GRACE_MS, PROVIDER, abortError, connect, resolveTtsOptions, serviceError, socketUrl, tsError } from './connection.js';
import type { ResolvedTtsOptions } from './connection.js';
import { TurnStream } from './turn-stream.js';
import type { TurnTimings } from './turn-stream.js';
import type { ElevenLabsTtsOptions } from './tts.js';
import { multiStreamInputPath, parseMultiServerMessage, toWireVoiceSettings } from './wire.js';
import type { WireInitMessage, WireMultiMessage } from './wire.js';

/**
 * Options as {@link ElevenLabsTtsOptions}; `inactivityTimeoutMs` defaults to the service's
 * longest, 180 s, because the socket also idles between the call's turns.
 */
export type ElevenLabsMultiContextTtsOptions = ElevenLabsTtsOptions;

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
  private readonly opts: ResolvedTtsOptions;
  private socket: ContextSocket | null = null;
  private nextContext = 1;
  private closed = false;

  constructor(options: ElevenLabsMultiContextTtsOptions) {
    this.opts = resolveTtsOptions(options, 180_000);
  }

  /**
   * A new context on the call's socket, connecting it first when there is none. Rejects as
   * `ElevenLabsTts.open` does (`tts.unauthorized`, `tts.http_<status>`, `tts.timeout`,
   * `tts.connection_failed`, an `AbortError`), or with `tts.closed` after `close()`.
   */
  async open(options: TtsStreamOptions, signal: AbortSignal): Promise<TtsStream> {
    if (signal.aborted) throw abortError();
    if (this.closed) throw tsError('tts.closed', 'the ElevenLabs provider of this call was closed', false);
    const { url, inactivityTimeoutS } = socketUrl(this.opts, multiStreamInputPath(options.voiceId), options);

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
    this.connecting = connect(this.ws, connectTimeoutMs).then(
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

  openContext(id: string, init: WireInitMessage, signal: AbortSignal, timings: TurnTimings): TtsStream {
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

/** One turn's context on the call's socket: the turn ends with `close_context`, a barge-in or failure stops it with the same (§1.3). */
class ContextStream extends TurnStream<WireMultiMessage> {
  protected readonly flushesBeforeEnd = true;

  constructor(
    private readonly socket: ContextSocket,
    private readonly id: string,
    signal: AbortSignal,
    timings: TurnTimings,
  ) {
    super(signal, timings);
  }

  start(init: WireInitMessage): void {
    this.begin({ ...init, context_id: this.id });
  }

  protected write(message: WireMultiMessage): void {
    this.socket.send(message);
  }

  protected textMessage(chunk: string, flush: boolean): WireMultiMessage {
    return flush ? { text: chunk, context_id: this.id, flush: true } : { text: chunk, context_id: this.id };
  }

  /** On this endpoint an empty text is never a close (§1.3): the flush carries none. */
  protected flushMessage(): WireMultiMessage {
    return { text: '', context_id: this.id, flush: true };
  }

  protected keepAliveMessage(): WireMultiMessage {
    return { text: '', context_id: this.id };
  }

  /** `close_context` generates only what was flushed, hence `flushesBeforeEnd`. */
  protected endMessage(): WireMultiMessage {
    return { context_id: this.id, close_context: true };
  }

  protected cancelMessage(): WireMultiMessage {
    return { context_id: this.id, close_context: true };
  }

  /** A socket that stalled one context is not trusted with the next turn (its retry included). */
  protected override onStall(): void {
    this.socket.retire();
  }

  protected release(): void {
    this.socket.release(this.id);
  }
}
