/**
 * Deepgram live transcription adapter on the official SDK (`@deepgram/sdk` v5,
 * `client.listen.v1`). It only translates: our options → the `/v1/listen` query, audio and
 * control messages → the socket, Deepgram messages → `SttEvent`s, failures → ProviderError.
 * Retries and fallbacks wrap the `SttProvider` interface (STYLE.md §4), so the SDK's own
 * reconnection is switched off: a silent reconnect would restart Deepgram's audio clock
 * and shift every timestamp.
 *
 * Wire format: reference/stt.md §1. SDK endpoint override: reference/README.md (the live
 * socket uses the `production` entry of `environment`).
 */
import { DeepgramClient } from '@deepgram/sdk';
import type { ProviderConnection, SttEvent, SttProvider, SttStream, SttStreamOptions, SttWord } from '../types.js';
import { ProviderError, abortError, isRetryableStatus } from '../provider-error.js';
import { EventQueue } from './event-queue.js';
import { listenQueryFromOptions, parseServerMessage } from './wire.js';
import type { DeepgramResults } from './wire.js';

/** Settings a Deepgram STT adapter gets from configuration; stream options override the defaults. */
export interface DeepgramSttConfig extends ProviderConnection {
  /** Default model when a stream does not name one; `nova-3` if neither does (the SDK requires one). */
  model?: string;
  language?: string;
  punctuate?: boolean;
  smartFormat?: boolean;
  profanityFilter?: boolean;
  /** Bound on opening the socket (TCP + upgrade); on expiry `open` rejects with `stt.timeout`. Default 5,000. */
  connectTimeoutMs?: number;
  /**
   * A KeepAlive is sent when nothing was sent for this long. Default 4,000: Deepgram closes
   * a socket that got neither audio nor KeepAlive for 10 s (NET-0001, reference/stt.md §1.2).
   */
  keepAliveIntervalMs?: number;
  /** How long `close()` waits for Deepgram's Metadata and close after CloseStream. Default 2,000. */
  closeTimeoutMs?: number;
}

const PROVIDER = 'deepgram';

/** Deepgram speech-to-text over the official SDK's live (`listen.v1`) socket. */
export class DeepgramStt implements SttProvider {
  readonly name = PROVIDER;
  private readonly client: DeepgramClient;

  constructor(private readonly config: DeepgramSttConfig) {
    const http = config.baseUrl.replace(/\/+$/, '');
    const ws = http.replace(/^http/, 'ws');
    this.client = new DeepgramClient({ apiKey: config.apiKey, environment: { base: http, production: ws, agent: ws, agentRest: http } });
  }

  /**
   * Opens a live stream and resolves once the socket is open. Rejects with a ProviderError
   * (`stt.unauthorized`, `stt.http_<status>`, `stt.timeout`, `stt.connection_failed`) or,
   * if `signal` aborts, with an AbortError. Aborting `signal` after the stream opened tears
   * the socket down and makes `events` throw an AbortError.
   */
  async open(options: SttStreamOptions, signal: AbortSignal): Promise<SttStream> {
    if (signal.aborted) throw abortError(signal);
    const c = this.config;
    const query = listenQueryFromOptions({
      ...options,
      model: options.model ?? c.model ?? 'nova-3',
      language: options.language ?? c.language,
      punctuate: options.punctuate ?? c.punctuate,
      smartFormat: options.smartFormat ?? c.smartFormat,
      profanityFilter: options.profanityFilter ?? c.profanityFilter,
    });
    const connectTimeoutMs = c.connectTimeoutMs ?? 5_000;
    const socket = await this.client.listen.v1.connect({
      ...query,
      model: query.model ?? 'nova-3',
      reconnectAttempts: 0,
      shouldReconnect: () => false,
      // Our own timer (below) decides; the SDK's is a backstop a little later.
      connectionTimeoutInSeconds: connectTimeoutMs / 1000 + 1,
    });
    const stream = new DeepgramSttStream(socket, {
      keepAliveIntervalMs: c.keepAliveIntervalMs ?? 4_000,
      closeTimeoutMs: c.closeTimeoutMs ?? 2_000,
    });
    await stream.start(signal, connectTimeoutMs);
    return stream;
  }
}

type ListenSocket = Awaited<ReturnType<DeepgramClient['listen']['v1']['connect']>>;
type State = 'connecting' | 'open' | 'closing' | 'closed';
type Pending = { kind: 'audio'; audio: Uint8Array } | { kind: 'finalize' };

class DeepgramSttStream implements SttStream {
  private readonly queue = new EventQueue<SttEvent>();
  readonly events: AsyncIterable<SttEvent> = this.queue;
  private state: State = 'connecting';
  /** Audio and Finalize given before the socket opened, replayed in order on open. */
  private pending: Pending[] = [];
  private lastSentAt = Date.now();
  private keepAliveTimer: NodeJS.Timeout | undefined;
  private closeTimer: NodeJS.Timeout | undefined;
  private requestId: string | undefined;
  private signal: AbortSignal | undefined;
  /** The SDK reports a failed socket as a close (code 1000) immediately followed by an error; we decide a tick later. */
  private observed: { close?: { code: number; reason: string }; error?: Error } = {};
  private settleScheduled = false;
  private opened: { resolve: () => void; reject: (e: unknown) => void } | undefined;
  private closedPromise: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly socket: ListenSocket,
    private readonly timing: { keepAliveIntervalMs: number; closeTimeoutMs: number },
  ) {}

  /** Connects and waits for open, the connect timeout, a failure or `signal`. */
  start(signal: AbortSignal, connectTimeoutMs: number): Promise<void> {
    this.signal = signal;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.failOpen(new ProviderError({ provider: PROVIDER, capability: 'stt', code: 'stt.timeout', retryable: true, message: `Deepgram did not open the socket within ${connectTimeoutMs} ms` }));
      }, connectTimeoutMs);
      const clear = (): void => clearTimeout(timer);
      this.opened = {
        resolve: () => (clear(), resolve()),
        reject: (e) => (clear(), reject(e)),
      };
      // The SDK's connect() awaited before we got here: the signal may already be aborted.
      if (signal.aborted) return this.onAbort();
      signal.addEventListener('abort', this.onAbort, { once: true });
      this.socket.on('open', () => this.onOpen());
      this.socket.on('message', (m: unknown) => this.onMessage(m));
      this.socket.on('close', (e: { code?: number; reason?: string }) => this.observe({ close: { code: e.code ?? 1005, reason: e.reason ?? '' } }));
      this.socket.on('error', (e: Error) => this.observe({ error: e }));
      this.socket.connect();
    });
  }

  send(audio: Uint8Array): void {
    // A copy: the caller may reuse its buffer before the socket opens.
    if (this.state === 'connecting') this.pending.push({ kind: 'audio', audio: audio.slice() });
    else if (this.state === 'open') this.write(() => this.socket.sendMedia(audio));
    // Closing or closed: audio after close() has nowhere to go; dropping it is the contract.
  }

  finalize(): void {
    if (this.state === 'connecting') this.pending.push({ kind: 'finalize' });
    else if (this.state === 'open') this.write(() => this.socket.sendFinalize({ type: 'Finalize' }));
  }

  /** Sends CloseStream and waits (at most `closeTimeoutMs`) for Metadata and the server's close; `events` then ends. */
  close(): Promise<void> {
    if (this.closedPromise) return this.closedPromise.promise;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.closedPromise = { promise, resolve };
    if (this.state !== 'open') {
      resolve();
      return promise;
    }
    this.state = 'closing';
    this.stopKeepAlive();
    this.write(() => this.socket.sendCloseStream({ type: 'CloseStream' }));
    this.closeTimer = setTimeout(() => this.finish(), this.timing.closeTimeoutMs);
    return promise;
  }

  private write(op: () => void): void {
    try {
      op();
      this.lastSentAt = Date.now();
    } catch {
      // The SDK throws when the socket is no longer open; the close event reports why.
    }
  }

  private onOpen(): void {
    if (this.state !== 'connecting') return;
    this.state = 'open';
    for (const p of this.pending) {
      if (p.kind === 'audio') this.write(() => this.socket.sendMedia(p.audio));
      else this.write(() => this.socket.sendFinalize({ type: 'Finalize' }));
    }
    this.pending = [];
    this.lastSentAt = Date.now();
    const checkMs = Math.max(20, Math.floor(this.timing.keepAliveIntervalMs / 4));
    this.keepAliveTimer = setInterval(() => {
      if (this.state === 'open' && Date.now() - this.lastSentAt >= this.timing.keepAliveIntervalMs) {
        this.write(() => this.socket.sendKeepAlive({ type: 'KeepAlive' }));
      }
    }, checkMs);
    this.keepAliveTimer.unref();
    this.opened?.resolve();
    this.opened = undefined;
  }

  private onMessage(raw: unknown): void {
    if (this.state === 'closed') return;
    const parsed = parseServerMessage(raw);
    if (parsed.kind !== 'message') return; // unknown types and malformed bodies are skipped (reference/README.md)
    const m = parsed.message;
    switch (m.type) {
      case 'Results': {
        this.requestId ??= m.metadata?.request_id;
        const event = transcriptEvent(m);
        if (event) this.queue.push(event);
        break;
      }
      case 'SpeechStarted':
        this.queue.push({ type: 'speech-started', atMs: toMs(m.timestamp) });
        break;
      case 'UtteranceEnd':
        this.queue.push({ type: 'utterance-end', lastWordEndMs: toMs(m.last_word_end) });
        break;
      case 'Metadata':
        // Metadata is Deepgram's last word after CloseStream; the close frame follows.
        this.requestId ??= m.request_id;
        break;
    }
  }

  private observe(o: { close?: { code: number; reason: string }; error?: Error }): void {
    this.observed = { close: this.observed.close ?? o.close, error: this.observed.error ?? o.error };
    if (this.settleScheduled) return;
    this.settleScheduled = true;
    setImmediate(() => this.settle());
  }

  /** Decides what a close and/or error means, given the state we were in. */
  private settle(): void {
    this.settleScheduled = false;
    const { close, error } = this.observed;
    this.observed = {};
    if (this.state === 'closed') return;
    if (this.state === 'connecting') {
      this.failOpen(connectError(error, close));
      return;
    }
    if (this.state === 'closing' || (close?.code === 1000 && !error)) {
      this.finish();
      return;
    }
    this.teardown();
    this.queue.fail(lostError(error, close, this.requestId));
  }

  private failOpen(err: unknown): void {
    if (this.state !== 'connecting') return;
    this.teardown();
    this.queue.fail(err);
    this.opened?.reject(err);
    this.opened = undefined;
  }

  private readonly onAbort = (): void => {
    const err = abortError(this.signal!);
    if (this.state === 'connecting') {
      this.failOpen(err);
      return;
    }
    if (this.state === 'closed') return;
    this.teardown();
    this.queue.fail(err);
    this.closedPromise?.resolve();
  };

  /** Normal end after close(), or a server close with 1000. */
  private finish(): void {
    if (this.state === 'closed') return;
    this.teardown();
    this.queue.end();
    this.closedPromise?.resolve();
  }

  private teardown(): void {
    this.state = 'closed';
    this.pending = [];
    this.stopKeepAlive();
    clearTimeout(this.closeTimer);
    this.signal?.removeEventListener('abort', this.onAbort);
    try {
      this.socket.close();
    } catch {
      // already closed
    }
    this.closedPromise?.resolve();
  }

  private stopKeepAlive(): void {
    clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = undefined;
  }
}

const toMs = (seconds: number): number => Math.round(seconds * 1000);

/**
 * One `Results` message as a transcript event. Empty interims are dropped (Deepgram sends
 * them for silence); empty finals are kept because `speechFinal`/Finalize still matter.
 */
function transcriptEvent(m: DeepgramResults): SttEvent | undefined {
  const alt = m.channel.alternatives[0];
  if (!alt) return undefined;
  if (!m.is_final && alt.transcript.trim() === '') return undefined;
  const words: SttWord[] = alt.words.map((w) => ({ word: w.punctuated_word ?? w.word, startMs: toMs(w.start), endMs: toMs(w.end), confidence: w.confidence }));
  return {
    type: 'transcript',
    text: alt.transcript,
    isFinal: m.is_final,
    speechFinal: m.speech_final ?? false,
    confidence: alt.confidence,
    startMs: toMs(m.start),
    endMs: toMs(m.start + m.duration),
    words,
  };
}

/** ws reports a refused upgrade as `Unexpected server response: <status>`; the SDK passes only that text on. */
function upgradeStatus(error: Error | undefined): number | undefined {
  const match = /Unexpected server response: (\d{3})/.exec(error?.message ?? '');
  return match ? Number(match[1]) : undefined;
}

function connectError(error: Error | undefined, close: { code: number; reason: string } | undefined): ProviderError {
  const status = upgradeStatus(error);
  if (status === 401 || status === 403) {
    return new ProviderError({ provider: PROVIDER, capability: 'stt', code: 'stt.unauthorized', status, retryable: false, message: `Deepgram refused the API key (HTTP ${status})`, cause: error });
  }
  if (status !== undefined) {
    return new ProviderError({ provider: PROVIDER, capability: 'stt', code: `stt.http_${status}`, status, retryable: isRetryableStatus(status), message: `Deepgram refused the connection (HTTP ${status})`, cause: error });
  }
  if (error?.message === 'TIMEOUT') {
    return new ProviderError({ provider: PROVIDER, capability: 'stt', code: 'stt.timeout', retryable: true, message: 'Deepgram did not open the socket in time', cause: error });
  }
  const detail = error?.message ?? `closed with ${close?.code ?? 'no code'}`;
  return new ProviderError({ provider: PROVIDER, capability: 'stt', code: 'stt.connection_failed', retryable: true, message: `Could not connect to Deepgram: ${detail}`, cause: error });
}

function lostError(error: Error | undefined, close: { code: number; reason: string } | undefined, requestId: string | undefined): ProviderError {
  const how = close ? `close ${close.code}${close.reason ? ` (${close.reason})` : ''}` : (error?.message ?? 'unknown');
  // 1008 is Deepgram's "could not decode the audio" (DATA-0000): resending the same audio will not help.
  const badAudio = close?.code === 1008;
  return new ProviderError({
    provider: PROVIDER,
    capability: 'stt',
    code: badAudio ? 'stt.bad_audio' : 'stt.connection_lost',
    retryable: !badAudio,
    message: `Deepgram stream ended unexpectedly: ${how}`,
    cause: error,
    ...(requestId !== undefined ? { requestId } : {}),
  });
}
