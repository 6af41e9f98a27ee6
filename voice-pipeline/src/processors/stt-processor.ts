import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';
import { ProviderError } from '../providers/provider-error.js';
import type { SttProvider, SttStream, SttStreamOptions, SttWord } from '../providers/types.js';

export interface SttProcessorOptions {
  provider: SttProvider;
  stream: SttStreamOptions;
  /** Session clock: ms since the call started. */
  clock: () => number;
  /** Reconnects after a retryable failure before the call is given up (default 3). */
  maxReconnects?: number;
  /** Caller audio kept while reconnecting, so no words are lost (default 5000 ms). */
  bufferMs?: number;
  reconnectDelayMs?: (attempt: number) => number;
  /**
   * While an utterance is open ({@link SttProcessor.setUtteranceOpen}), caller audio is sent
   * to the provider at every this many ms of the call's audio (default 100: five carrier frames, within the
   * 20-250 ms Deepgram recommends for streaming). Each send is a WebSocket frame and a socket
   * write, the largest single item of a pipeline thread's time on a core (perf at 200 calls:
   * 14 %, README "Benchmarks"). `finalize` sends what is held first, so
   * the end of a turn is not delayed; interim results may come up to 80 ms later, while
   * barge-in pauses on the local VAD and does not wait for them. 20 sends every frame on arrival.
   */
  sendChunkMs?: number;
  /**
   * The same while no utterance is open (default 240: twelve carrier frames, still within
   * Deepgram's 20-250 ms): the line is quiet, or the agent speaks, most of a call, and the STT
   * needs that audio only to keep its timeline and hear what the local VAD might miss. Longer
   * buys little: at 2000 ms (one send in 2 s of quiet instead of four a second, 200 calls) the gateway's CPU per
   * call-second moved by less than the spread between runs (README "Benchmarks"). The
   * onset of an utterance sends what is held at once, so speech reaches the STT as soon as
   * the VAD heard it, as with short chunks.
   */
  quietChunkMs?: number;
}

/**
 * Streams caller audio to the STT provider and turns its events into transcript frames
 * on the session clock. A dropped connection is reopened (audio is buffered meanwhile);
 * only when reconnecting fails does an `error` frame with `fatal: true` go up.
 */
export class SttProcessor extends Processor {
  readonly name = 'SttProcessor';
  private stream: SttStream | null = null;
  /** Session time at which the current stream's audio began (its t=0). */
  private streamOriginAt = 0;
  /** The stream opened before any audio was held for it: its t=0 is the next frame's time. */
  private originAtNextFrame = false;
  private pending: Uint8Array[] = [];
  private pendingMs = 0;
  private readonly abort = new AbortController();
  private closed = false;
  private reconnects = 0;
  private audioMsSent = 0;
  /** Audio held for the next send to an open stream (see `sendChunkMs`). */
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private heldMs = 0;
  /** The current chunk length: `sendChunkMs` while an utterance is open, else `quietChunkMs`. */
  private chunkMs: number;

  constructor(private readonly opts: SttProcessorOptions) {
    super();
    this.chunkMs = this.quietChunkMs;
  }

  private get quietChunkMs(): number {
    return this.opts.quietChunkMs ?? 240;
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      this.push(frame, 'up');
      return;
    }
    if (frame.kind === 'call.start') void this.connect(frame.at);
    if (frame.kind === 'audio.in') this.sendAudio(frame.mulaw, frame.at);
    this.push(frame);
  }

  /**
   * The turn detector's word on the caller: an utterance opened (speech onset: what is held
   * goes now, then short chunks) or closed (the turn was taken or dropped: long chunks).
   */
  setUtteranceOpen(open: boolean): void {
    this.chunkMs = open ? (this.opts.sendChunkMs ?? 100) : this.quietChunkMs;
    if (open) this.flushHeld();
  }

  /** Asks the provider to finalise what it has heard (end of the caller's turn). */
  finalize(): void {
    this.flushHeld();
    this.stream?.finalize();
  }

  private sendAudio(bytes: Uint8Array, at: number): void {
    const ms = this.durationMs(bytes);
    if (this.stream) {
      if (this.originAtNextFrame) {
        this.originAtNextFrame = false;
        this.streamOriginAt = at;
      }
      this.hold(bytes, ms);
      return;
    }
    if (this.pending.length === 0) this.streamOriginAt = at;
    this.pending.push(bytes);
    this.pendingMs += ms;
    const limit = this.opts.bufferMs ?? 5000;
    while (this.pendingMs > limit && this.pending.length > 1) {
      const dropped = this.pending.shift()!;
      this.pendingMs -= this.durationMs(dropped);
      this.streamOriginAt += this.durationMs(dropped);
    }
  }

  /**
   * Adds audio for an open stream to what is held, sending it when a chunk is complete. Chunks
   * end on a grid of the call's audio (every chunkMs of it), not chunkMs after the last send: an
   * onset or a Finalize sends early without shifting where later chunks end, so the end of
   * speech falls anywhere within a chunk, as the speech's length decides.
   */
  private hold(bytes: Uint8Array, ms: number): void {
    const before = this.audioMsSent + this.heldMs;
    this.held.push(bytes);
    this.heldBytes += bytes.length;
    this.heldMs += ms;
    if (Math.floor((before + ms) / this.chunkMs) > Math.floor(before / this.chunkMs)) this.flushHeld();
  }

  /** Sends the held audio as one chunk (one WebSocket frame); with the stream lost, it joins the reconnect buffer. */
  private flushHeld(): void {
    if (this.held.length === 0) return;
    if (!this.stream) {
      if (this.pending.length === 0) this.streamOriginAt = this.opts.clock() - this.heldMs;
      this.pending.push(...this.held);
      this.pendingMs += this.heldMs;
      this.held = [];
      this.heldBytes = 0;
      this.heldMs = 0;
      return;
    }
    // Uninitialised (every byte is written below) and, at these sizes, a slice of Node's pool:
    // a zero-filled array of its own was a malloc and a free per chunk on the pipeline thread.
    const chunk = this.held.length === 1 ? this.held[0]! : Buffer.allocUnsafe(this.heldBytes);
    if (this.held.length > 1) {
      let offset = 0;
      for (const part of this.held) {
        chunk.set(part, offset);
        offset += part.length;
      }
    }
    this.stream.send(chunk);
    this.audioMsSent += this.heldMs;
    this.held = [];
    this.heldBytes = 0;
    this.heldMs = 0;
  }

  /** Audio length of raw bytes in the declared encoding (G.711: 1 byte, linear16: 2 bytes a sample). */
  private durationMs(bytes: Uint8Array): number {
    const bytesPerSample = this.opts.stream.encoding === 'linear16' ? 2 : 1;
    return (bytes.length / bytesPerSample / this.opts.stream.sampleRateHz) * 1000;
  }

  private async connect(at: number): Promise<void> {
    if (this.pending.length === 0) this.streamOriginAt = at;
    let stream: SttStream;
    try {
      stream = await this.opts.provider.open(this.opts.stream, this.abort.signal);
    } catch (err) {
      await this.failed(err);
      return;
    }
    if (this.closed) {
      void stream.close().catch(() => undefined);
      return;
    }
    this.originAtNextFrame = this.pending.length === 0;
    this.stream = stream;
    // The audio that came while connecting (a carrier frame a piece: a few at a call's start on
    // loopback, more over TLS to a real provider, up to `bufferMs` of them after a drop) goes in
    // chunks like live audio, not a WebSocket frame and a socket write per frame; a last part
    // short of a chunk waits for the chunk it ends.
    const pending = this.pending;
    this.pending = [];
    this.pendingMs = 0;
    for (const piece of pending) this.hold(piece, this.durationMs(piece));
    try {
      for await (const ev of stream.events) {
        const now = this.opts.clock();
        if (ev.type === 'speech-started') this.push({ kind: 'stt.speech-started', at: now });
        else if (ev.type === 'utterance-end') this.push({ kind: 'stt.utterance-end', at: now });
        else if (!ev.isFinal) {
          if (ev.text) this.push({ kind: 'transcript.interim', text: ev.text, words: onSessionClock(ev.words, this.streamOriginAt), confidence: ev.confidence, at: now });
        } else {
          this.push({
            kind: 'transcript.final',
            text: ev.text,
            words: onSessionClock(ev.words, this.streamOriginAt),
            confidence: ev.confidence,
            startMs: this.streamOriginAt + ev.startMs,
            endMs: this.streamOriginAt + ev.endMs,
            speechFinal: ev.speechFinal,
            at: now,
          });
        }
      }
      this.stream = null;
      this.flushHeld();
      if (!this.closed) await this.failed(new ProviderError({ provider: this.opts.provider.name, capability: 'stt', code: 'stt.connection_lost', message: 'STT stream ended unexpectedly', retryable: true }));
    } catch (err) {
      this.stream = null;
      this.flushHeld();
      await this.failed(err);
    }
  }

  private async failed(err: unknown): Promise<void> {
    if (this.closed || (err instanceof Error && err.name === 'AbortError')) return;
    const error =
      err instanceof ProviderError
        ? err
        : new ProviderError({ provider: this.opts.provider.name, capability: 'stt', code: 'stt.failed', message: err instanceof Error ? err.message : String(err), retryable: true, cause: err });
    const max = this.opts.maxReconnects ?? 3;
    if (error.retryable && this.reconnects < max) {
      this.reconnects += 1;
      this.push({ kind: 'error', error, fatal: false, at: this.opts.clock() }, 'up');
      const delay = this.opts.reconnectDelayMs?.(this.reconnects) ?? 200 * 2 ** (this.reconnects - 1);
      await new Promise((r) => setTimeout(r, delay));
      if (!this.closed) await this.connect(this.opts.clock());
      return;
    }
    this.push({ kind: 'error', error, fatal: true, at: this.opts.clock() }, 'up');
  }

  /** Caller audio streamed to the provider so far, in ms (STT is billed on it). */
  get audioMs(): number {
    return this.audioMsSent;
  }

  override async close(): Promise<void> {
    this.closed = true;
    const s = this.stream;
    this.stream = null;
    this.abort.abort();
    if (s) await s.close().catch(() => undefined);
  }
}

/** Word times of a stream (from its first byte) on the session clock, `origin` being when that byte was audio. */
function onSessionClock(words: SttWord[], origin: number): SttWord[] {
  return words.map((w) => ({ ...w, startMs: origin + w.startMs, endMs: origin + w.endMs }));
}
