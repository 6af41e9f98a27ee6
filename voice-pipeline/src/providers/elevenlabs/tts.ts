/**
 * ElevenLabs streaming TTS over the `stream-input` WebSocket (reference/tts.md §1).
 *
 * Why `ws` and not the official SDK: `@elevenlabs/elevenlabs-js` (2.73) ships only the
 * *types* of the stream-input messages (`api/resources/v1TextToSpeechVoiceIdStreamInput`);
 * its client methods wrap the HTTP endpoints (`textToSpeech.stream`, which needs the whole
 * text up front). Text that arrives token by token from the LLM needs the WebSocket, so this
 * adapter speaks the documented wire protocol itself (STYLE.md §4 allows it when the SDK
 * has no client for the endpoint).
 */
import { WebSocket } from 'ws';
import type { ProviderError } from '../provider-error.js';
import type { TtsEvent, TtsProvider, TtsStream, TtsStreamOptions } from '../types.js';
import { CHUNK_LENGTH_SCHEDULE, CLOSE_GRACE_MS, DEFAULT_MODEL, PROVIDER, abortError, closeError, connect, serviceError, tsError } from './connection.js';
import { EventQueue } from './event-queue.js';
import { parseServerMessage, streamInputPath, toWebSocketBase, toWireVoiceSettings } from './wire.js';
import type { WireInitMessage, WireTextMessage } from './wire.js';

/** Options of {@link ElevenLabsTts}; the adapter never reads the environment. */
export interface ElevenLabsTtsOptions {
  apiKey: string;
  /** `https://api.elevenlabs.io` (or a regional host) or `http://127.0.0.1:PORT` for the simulator. */
  baseUrl: string;
  /** Default model when the stream options name none. */
  model?: string;
  /** After `flush()`/`end()`, how long to wait for audio (and, after `end()`, between chunks until `isFinal`). Default 5000. */
  firstByteTimeoutMs?: number;
  /** WebSocket handshake limit, DNS and TCP included. Default 5000. */
  connectTimeoutMs?: number;
  /** Server-side idle limit (sent in whole seconds, 1–180); the adapter sends keep-alives at half of it. Default 20000. */
  inactivityTimeoutMs?: number;
}

/**
 * `TtsProvider` for ElevenLabs. Each `open()` is one agent turn and one socket: the init
 * message (`" "` with voice settings and the chunk schedule) goes out as soon as the socket
 * opens, so pre-opening before the LLM speaks hides the connection latency. Barge-in:
 * aborting the signal closes the socket at once and ends `events` without an error;
 * `stream-input` has no cancel message (reference/tts.md §1.2).
 */
export class ElevenLabsTts implements TtsProvider {
  readonly name = PROVIDER;
  private readonly opts: Required<Omit<ElevenLabsTtsOptions, 'model'>> & { model: string };

  constructor(options: ElevenLabsTtsOptions) {
    this.opts = {
      apiKey: options.apiKey,
      baseUrl: toWebSocketBase(options.baseUrl),
      model: options.model ?? DEFAULT_MODEL,
      firstByteTimeoutMs: options.firstByteTimeoutMs ?? 5000,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      inactivityTimeoutMs: options.inactivityTimeoutMs ?? 20_000,
    };
  }

  /**
   * Connects and sends the init message. Rejects with a ProviderError (`tts.unauthorized`,
   * `tts.http_<status>`, `tts.timeout`, `tts.connection_failed`) or, if `signal` aborts
   * first, with an `AbortError`. Failures after the socket opened surface through `events`.
   */
  async open(options: TtsStreamOptions, signal: AbortSignal): Promise<TtsStream> {
    if (signal.aborted) throw abortError();
    const inactivityTimeoutS = Math.min(180, Math.max(1, Math.ceil(this.opts.inactivityTimeoutMs / 1000)));
    const query = new URLSearchParams({
      model_id: options.model ?? this.opts.model,
      output_format: options.outputFormat,
      inactivity_timeout: String(inactivityTimeoutS),
    });
    if (options.language !== undefined) query.set('language_code', options.language);
    const url = `${this.opts.baseUrl}${streamInputPath(options.voiceId)}?${query.toString()}`;

    const ws = new WebSocket(url, { headers: { 'xi-api-key': this.opts.apiKey } });
    // `ws` emits 'error' after terminate() during the handshake; an unhandled 'error' would crash.
    ws.on('error', () => {});
    await connect(ws, this.opts.connectTimeoutMs, signal);

    const init: WireInitMessage = { text: ' ', generation_config: { chunk_length_schedule: CHUNK_LENGTH_SCHEDULE } };
    if (options.voiceSettings !== undefined) init.voice_settings = toWireVoiceSettings(options.voiceSettings);
    return new StreamInputSession(ws, signal, init, {
      firstByteTimeoutMs: this.opts.firstByteTimeoutMs,
      keepAliveMs: (inactivityTimeoutS * 1000) / 2,
    });
  }
}

interface SessionTimings {
  firstByteTimeoutMs: number;
  keepAliveMs: number;
}

/** One open `stream-input` socket. State: open → ending (`""` sent) → closed (final, failure or abort). */
class StreamInputSession implements TtsStream {
  private readonly ws: WebSocket;
  private readonly signal: AbortSignal;
  private readonly timings: SessionTimings;
  private readonly queue: EventQueue<TtsEvent>;
  private state: 'open' | 'ending' | 'closed' = 'open';
  /** Text went out since the last flush, so a flush will produce audio worth waiting for. */
  private unflushedText = false;
  private watchdog: NodeJS.Timeout | null = null;
  private keepAlive: NodeJS.Timeout | null = null;
  private readonly onAbort = (): void => this.abort();

  constructor(ws: WebSocket, signal: AbortSignal, init: WireInitMessage, timings: SessionTimings) {
    this.ws = ws;
    this.signal = signal;
    this.timings = timings;
    this.queue = new EventQueue<TtsEvent>(() => this.abort());
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.onMessage(data.toString());
    });
    ws.on('close', (code, reason) => this.onClose(code, reason.toString()));
    signal.addEventListener('abort', this.onAbort, { once: true });
    this.send(init);
    if (signal.aborted) this.abort();
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
      this.send({ text: chunk });
      return;
    }
    // Text and flush in one message, as the reference's example sends them (§1.1.2): one frame and one write instead of two.
    this.send({ text: chunk, flush: true });
    this.flushed();
  }

  flush(): void {
    if (this.state !== 'open') return;
    // The reference's flush is a text message with `flush: true`; with no new text it carries a single
    // space (the keep-alive text), because an empty string would close the stream (§1.1.4).
    this.send({ text: ' ', flush: true });
    this.flushed();
  }

  private flushed(): void {
    if (this.unflushedText) this.armWatchdog();
    this.unflushedText = false;
  }

  end(): void {
    if (this.state !== 'open') return;
    this.send({ text: '' });
    this.state = 'ending';
    this.clearKeepAlive();
    // After the close message the server always answers, at least with `isFinal`.
    this.armWatchdog();
  }

  private send(message: WireInitMessage | WireTextMessage): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify(message));
    if (this.state === 'open') this.scheduleKeepAlive();
  }

  private onMessage(text: string): void {
    if (this.state === 'closed') return;
    const msg = parseServerMessage(text);
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

  private onClose(code: number, reason: string): void {
    if (this.state === 'closed') return;
    if (code === 1000 && this.state === 'ending') {
      // Closed normally after our `""` without `isFinal`: all audio is in, so end as if final.
      this.queue.push({ type: 'final' });
      this.queue.end();
      this.shutdown();
      return;
    }
    this.failWith(closeError(code, reason));
  }

  private failWith(error: ProviderError): void {
    if (this.state === 'closed') return;
    this.queue.fail(error);
    this.shutdown();
  }

  private abort(): void {
    if (this.state === 'closed') return;
    this.queue.drop();
    this.shutdown();
  }

  private shutdown(): void {
    this.state = 'closed';
    this.clearWatchdog();
    this.clearKeepAlive();
    this.signal.removeEventListener('abort', this.onAbort);
    const ws = this.ws;
    if (ws.readyState === WebSocket.OPEN) {
      ws.close(1000);
      // A peer that never answers the close frame must not keep the socket alive.
      setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
    } else if (ws.readyState === WebSocket.CONNECTING) {
      ws.terminate();
    }
  }

  private armWatchdog(): void {
    if (this.watchdog !== null) return;
    const ms = this.timings.firstByteTimeoutMs;
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      this.failWith(tsError('tts.timeout', `no audio from ElevenLabs within ${ms} ms`, true));
    }, ms);
  }

  private clearWatchdog(): void {
    if (this.watchdog !== null) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  /** `{"text": " "}` after `keepAliveMs` without sending, so a socket opened ahead of a slow LLM survives `inactivity_timeout` (§1.1.3). */
  private scheduleKeepAlive(): void {
    this.clearKeepAlive();
    this.keepAlive = setTimeout(() => {
      this.keepAlive = null;
      if (this.state === 'open') this.send({ text: ' ' });
    }, this.timings.keepAliveMs);
    this.keepAlive.unref();
  }

  private clearKeepAlive(): void {
    if (this.keepAlive !== null) clearTimeout(this.keepAlive);
    this.keepAlive = null;
  }
}

