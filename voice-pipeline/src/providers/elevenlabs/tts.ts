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
import type { TtsProvider, TtsStream, TtsStreamOptions } from '../types.js';
import { CHUNK_LENGTH_SCHEDULE, CLOSE_GRACE_MS, PROVIDER, abortError, connect, resolveTtsOptions, socketUrl } from './connection.js';
import type { ResolvedTtsOptions } from './connection.js';
import { TurnStream } from './turn-stream.js';
import type { TurnTimings } from './turn-stream.js';
import { parseServerMessage, streamInputPath, toWireVoiceSettings } from './wire.js';
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
  private readonly opts: ResolvedTtsOptions;

  constructor(options: ElevenLabsTtsOptions) {
    this.opts = resolveTtsOptions(options, 20_000);
  }

  /**
   * Connects and sends the init message. Rejects with a ProviderError (`tts.unauthorized`,
   * `tts.http_<status>`, `tts.timeout`, `tts.connection_failed`) or, if `signal` aborts
   * first, with an `AbortError`. Failures after the socket opened surface through `events`.
   */
  async open(options: TtsStreamOptions, signal: AbortSignal): Promise<TtsStream> {
    if (signal.aborted) throw abortError();
    const { url, inactivityTimeoutS } = socketUrl(this.opts, streamInputPath(options.voiceId), options);

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

/** One open `stream-input` socket: the turn ends with `""`, and closing the socket is the only way to stop it (§1.2). */
class StreamInputSession extends TurnStream<WireInitMessage | WireTextMessage> {
  protected readonly flushesBeforeEnd = false;

  constructor(
    private readonly ws: WebSocket,
    signal: AbortSignal,
    init: WireInitMessage,
    timings: TurnTimings,
  ) {
    super(signal, timings);
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.onServerMessage(parseServerMessage(data.toString()));
    });
    ws.on('close', (code, reason) => this.onSocketClosed(code, reason.toString()));
    this.begin(init);
  }

  protected write(message: WireInitMessage | WireTextMessage): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  protected textMessage(chunk: string, flush: boolean): WireTextMessage {
    return flush ? { text: chunk, flush: true } : { text: chunk };
  }

  /** The reference's flush is a text message with `flush: true`; with no new text it carries a single space (the keep-alive text), because an empty string would close the stream (§1.1.4). */
  protected flushMessage(): WireTextMessage {
    return { text: ' ', flush: true };
  }

  protected keepAliveMessage(): WireTextMessage {
    return { text: ' ' };
  }

  /** `""` generates what is left, then `isFinal`, then the service closes 1000 (§1.1.4). */
  protected endMessage(): WireTextMessage {
    return { text: '' };
  }

  protected cancelMessage(): null {
    return null;
  }

  protected release(): void {
    const ws = this.ws;
    if (ws.readyState === WebSocket.OPEN) {
      ws.close(1000);
      // A peer that never answers the close frame must not keep the socket alive.
      setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
    } else if (ws.readyState === WebSocket.CONNECTING) {
      ws.terminate();
    }
  }
}
