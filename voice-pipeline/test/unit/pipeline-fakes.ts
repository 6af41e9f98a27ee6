/**
 * In-memory stand-ins for the provider interfaces and the carrier leg, for unit tests of
 * OUR processors (STYLE.md §9: mock only what we cannot run). Adapters are tested against
 * their simulators elsewhere; these fakes only honour the contract of providers/types.ts:
 * ordered events, and an aborted signal ends the stream at once with an AbortError.
 */
import type { AudioTransport } from '../../src/processors/audio-output.js';
import type {
  LlmEvent,
  LlmProvider,
  LlmRequest,
  SttEvent,
  SttProvider,
  SttStream,
  SttStreamOptions,
  TtsAlignment,
  TtsEvent,
  TtsProvider,
  TtsStream,
  TtsStreamOptions,
} from '../../src/providers/types.js';

export function abortError(): Error {
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
}

/**
 * An async queue the test writes into and a provider stream reads from. When `signal` is
 * aborted (and `honourAbort`), pending and later reads reject with an AbortError.
 */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly waiters: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }[] = [];
  private ended = false;
  private error: unknown = undefined;

  constructor(signal?: AbortSignal, honourAbort = true) {
    if (signal && honourAbort) {
      if (signal.aborted) this.fail(abortError(), true);
      else signal.addEventListener('abort', () => this.fail(abortError(), true), { once: true });
    }
  }

  get closed(): boolean {
    return this.ended || this.error !== undefined;
  }

  push(item: T): void {
    if (this.closed) return;
    const w = this.waiters.shift();
    if (w) w.resolve({ value: item, done: false });
    else this.items.push(item);
  }

  end(): void {
    if (this.closed) return;
    this.ended = true;
    for (const w of this.waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  /** Ends with an error, after the queued items unless `dropQueued` (an abort drops them). */
  fail(error: unknown, dropQueued = false): void {
    if (this.closed) return;
    this.error = error;
    if (dropQueued) this.items.length = 0;
    for (const w of this.waiters.splice(0)) w.reject(error);
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.error !== undefined) return Promise.reject(this.error);
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
      },
      return: () => {
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

// ---------- LLM ----------

export interface LlmCall {
  request: LlmRequest;
  signal: AbortSignal;
  /** Push events into the reply; `end()` finishes it, `fail(err)` throws from the iterable. */
  reply: Channel<LlmEvent>;
}

/**
 * A fake LlmProvider. Each `stream()` call is recorded; with a `script` the reply is
 * written at once (events, then an optional error), otherwise the test drives `reply`.
 */
export class FakeLlm implements LlmProvider {
  readonly name = 'fake-llm';
  readonly calls: LlmCall[] = [];

  constructor(private readonly script?: (request: LlmRequest, index: number) => { events: LlmEvent[]; error?: unknown }) {}

  stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<LlmEvent> {
    const reply = new Channel<LlmEvent>(signal);
    this.calls.push({ request: structuredClone(request), signal, reply });
    if (this.script) {
      const { events, error } = this.script(request, this.calls.length - 1);
      for (const e of events) reply.push(e);
      if (error !== undefined) reply.fail(error);
      else reply.end();
    }
    return reply;
  }
}

/** The events of a plain text reply, streamed word by word. */
export function llmReply(text: string, usage = { inputTokens: 10, outputTokens: 5 }): LlmEvent[] {
  const pieces = text.split(/(?= )/);
  return [...pieces.map((t) => ({ type: 'text' as const, text: t })), { type: 'usage', ...usage }, { type: 'done', finishReason: 'stop' }];
}

// ---------- TTS ----------

/** One synthesis stream; the test emits audio and the final event, or lets `auto` speak. */
export class FakeTtsStream implements TtsStream {
  readonly texts: string[] = [];
  flushes = 0;
  /** Flushes that came with their text in one `sendText` (one provider message). */
  flushesWithText = 0;
  ended = false;
  readonly channel: Channel<TtsEvent>;
  private spokenUpTo = 0;

  constructor(
    readonly options: TtsStreamOptions,
    readonly signal: AbortSignal,
    honourAbort: boolean,
    private readonly msPerChar: number | null,
  ) {
    this.channel = new Channel<TtsEvent>(signal, honourAbort);
  }

  get events(): AsyncIterable<TtsEvent> {
    return this.channel;
  }

  get text(): string {
    return this.texts.join('');
  }

  sendText(text: string, opts?: { flush?: boolean }): void {
    this.texts.push(text);
    if (opts?.flush === true) {
      this.flushesWithText += 1;
      this.flush();
    }
  }

  flush(): void {
    this.flushes += 1;
    if (this.msPerChar !== null) this.speakPending();
  }

  end(): void {
    this.ended = true;
    if (this.msPerChar !== null) {
      this.speakPending();
      this.final();
    }
  }

  /** Emits one audio chunk (μ-law bytes) with optional alignment. */
  audio(bytes: Uint8Array, alignment: TtsAlignment | null = null): void {
    this.channel.push({ type: 'audio', audio: bytes, alignment });
  }

  /** Emits `final` and ends the event stream. */
  final(): void {
    this.channel.push({ type: 'final' });
    this.channel.end();
  }

  fail(error: unknown): void {
    this.channel.fail(error);
  }

  private speakPending(): void {
    const text = this.text.slice(this.spokenUpTo);
    this.spokenUpTo = this.text.length;
    if (text) this.audio(...speech(text, this.msPerChar!));
  }
}

/** μ-law audio of `msPerChar` per character of `text`, with per-character alignment. */
export function speech(text: string, msPerChar: number): [Uint8Array, TtsAlignment] {
  const chars = [...text];
  const bytes = new Uint8Array(chars.length * msPerChar * 8).fill(0x2a);
  return [bytes, { chars, startMs: chars.map((_, i) => i * msPerChar), durationMs: chars.map(() => msPerChar) }];
}

export interface FakeTtsOptions {
  /** Speak flushed text at once as audio of this many ms per character, and finish on `end()`. */
  msPerChar?: number;
  /** When false the stream keeps delivering after abort (a provider that is slow to stop). */
  honourAbort?: boolean;
}

export class FakeTts implements TtsProvider {
  readonly name = 'fake-tts';
  readonly streams: FakeTtsStream[] = [];
  /** Errors the next `open()` calls throw, in order. */
  readonly openErrors: unknown[] = [];
  /** When set, `open()` waits for it (the test resolves it to let the connection finish). */
  openGate: Promise<void> | null = null;
  readonly openSignals: AbortSignal[] = [];

  constructor(private readonly fakeOpts: FakeTtsOptions = {}) {}

  async open(options: TtsStreamOptions, signal: AbortSignal): Promise<TtsStream> {
    this.openSignals.push(signal);
    if (this.openGate) {
      const gate = this.openGate;
      await new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(abortError()), { once: true });
        void gate.then(resolve);
      });
    }
    signal.throwIfAborted();
    const err = this.openErrors.shift();
    if (err !== undefined) throw err;
    const stream = new FakeTtsStream(options, signal, this.fakeOpts.honourAbort ?? true, this.fakeOpts.msPerChar ?? null);
    this.streams.push(stream);
    return stream;
  }
}

// ---------- STT ----------

export class FakeSttStream implements SttStream {
  readonly sent: Uint8Array[] = [];
  finalizes = 0;
  closed = false;
  readonly channel: Channel<SttEvent>;

  constructor(
    readonly options: SttStreamOptions,
    signal: AbortSignal,
  ) {
    this.channel = new Channel<SttEvent>(signal);
  }

  get events(): AsyncIterable<SttEvent> {
    return this.channel;
  }

  send(audio: Uint8Array): void {
    this.sent.push(audio);
  }

  finalize(): void {
    this.finalizes += 1;
  }

  /** The provider reports an event (the test plays the STT). */
  emit(event: SttEvent): void {
    this.channel.push(event);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.channel.end();
  }
}

export class FakeStt implements SttProvider {
  readonly name = 'fake-stt';
  readonly streams: FakeSttStream[] = [];

  async open(options: SttStreamOptions, signal: AbortSignal): Promise<SttStream> {
    signal.throwIfAborted();
    const s = new FakeSttStream(options, signal);
    this.streams.push(s);
    return s;
  }
}

// ---------- carrier leg ----------

export type TransportEvent = { type: 'audio'; bytes: number } | { type: 'mark'; name: string } | { type: 'clear' } | { type: 'pause' } | { type: 'resume' } | { type: 'hangup' };

/**
 * Records what the output sends to the carrier. Marks come back when the test calls
 * `echo`/`echoAll`, or by themselves: `autoEcho` plays instantly (echo on a microtask),
 * `realtime` plays 8 bytes per ms of (possibly fake) timer time. Like Twilio, `clear()`
 * returns every pending mark at once (reference/telephony-twilio.md §2.2).
 */
export class FakeTransport implements AudioTransport {
  readonly log: TransportEvent[] = [];
  readonly audio: Uint8Array[] = [];
  readonly marks: string[] = [];
  readonly pending: string[] = [];
  clears = 0;
  hangups = 0;
  private readonly listeners: ((name: string) => void)[] = [];
  /** `realtime`: when the audio queued so far finishes playing (Date.now() ms). */
  private playEndAt = 0;
  private readonly echoTimers = new Set<NodeJS.Timeout>();

  constructor(private readonly opts: { autoEcho?: boolean; realtime?: boolean } = {}) {}

  get audioBytes(): number {
    return this.audio.reduce((n, a) => n + a.length, 0);
  }

  sendAudio(mulaw: Uint8Array): void {
    this.audio.push(mulaw);
    this.log.push({ type: 'audio', bytes: mulaw.length });
    if (this.opts.realtime) this.playEndAt = Math.max(Date.now(), this.playEndAt) + mulaw.length / 8;
  }

  sendMark(name: string): void {
    this.marks.push(name);
    this.pending.push(name);
    this.log.push({ type: 'mark', name });
    if (this.opts.autoEcho) queueMicrotask(() => this.echo(name));
    if (this.opts.realtime) {
      const timer = setTimeout(() => {
        this.echoTimers.delete(timer);
        this.echo(name);
      }, Math.max(0, this.playEndAt - Date.now()));
      this.echoTimers.add(timer);
    }
  }

  clear(): void {
    this.clears += 1;
    this.log.push({ type: 'clear' });
    for (const t of this.echoTimers) clearTimeout(t);
    this.echoTimers.clear();
    this.playEndAt = 0;
    for (const name of this.pending.splice(0)) this.played(name);
  }

  /** Like the leg: the carrier's buffer empties; pending marks stay pending (the held audio plays after `resume`). */
  pause(): void {
    this.log.push({ type: 'pause' });
  }

  resume(): void {
    this.log.push({ type: 'resume' });
  }

  onMarkPlayed(listener: (name: string) => void): void {
    this.listeners.push(listener);
  }

  /** The carrier played up to mark `name` (and every mark before it). */
  echo(name: string): void {
    const i = this.pending.indexOf(name);
    if (i < 0) return;
    for (const n of this.pending.splice(0, i + 1)) this.played(n);
  }

  echoAll(): void {
    for (const n of this.pending.splice(0)) this.played(n);
  }

  async hangup(): Promise<void> {
    this.hangups += 1;
    this.log.push({ type: 'hangup' });
  }

  private played(name: string): void {
    for (const l of this.listeners) l(name);
  }
}
