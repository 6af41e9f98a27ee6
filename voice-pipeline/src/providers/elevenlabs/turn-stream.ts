/**
 * One agent turn's TTS stream, what both ElevenLabs endpoints share (reference/tts.md §1): the
 * text and flush bookkeeping, the stall watchdog, the keep-alive, the server's audio, final and
 * error messages, a close, a barge-in. What goes on the wire, and what ending the turn does to
 * the socket, is the endpoint's: `stream-input` (`tts.ts`, a socket per turn) or
 * `multi-stream-input` (`multi-context-tts.ts`, a context per turn).
 *
 * State: open → ending (the end message sent after the last text) → closed (final, failure or abort).
 */
import type { ProviderError } from '../provider-error.js';
import type { TtsEvent, TtsStream } from '../types.js';
import { closeError, serviceError, tsError } from './connection.js';
import { EventQueue } from './event-queue.js';
import type { ServerMessage } from './wire.js';

export interface TurnTimings {
  /** After a flush or the end, how long to wait for audio (and, after the end, between chunks until the final). */
  firstByteTimeoutMs: number;
  /** A keep-alive goes out after this long without sending (half the service's `inactivity_timeout`). */
  keepAliveMs: number;
}

export abstract class TurnStream<M> implements TtsStream {
  private readonly queue: EventQueue<TtsEvent>;
  private state: 'open' | 'ending' | 'closed' = 'open';
  /** Text went out since the last flush, so a flush will produce audio worth waiting for. */
  private unflushedText = false;
  private watchdog: NodeJS.Timeout | null = null;
  private keepAlive: NodeJS.Timeout | null = null;
  private readonly onAbort = (): void => this.abort();

  constructor(
    private readonly signal: AbortSignal,
    private readonly timings: TurnTimings,
  ) {
    this.queue = new EventQueue<TtsEvent>(() => this.abort());
  }

  /** Sends `message` if the socket is open. */
  protected abstract write(message: M): void;
  /** A text chunk (ending with a space), with its flush when `flush`. */
  protected abstract textMessage(chunk: string, flush: boolean): M;
  /** A flush carrying no new text. */
  protected abstract flushMessage(): M;
  /** Keeps the stream alive against `inactivity_timeout` without generating anything. */
  protected abstract keepAliveMessage(): M;
  /** Ends the turn's text: what was sent is generated, then the final comes. */
  protected abstract endMessage(): M;
  /** Stops the turn on the service when it fails or is aborted while open; `null` when closing the socket is the way. */
  protected abstract cancelMessage(): M | null;
  /** Whether text not yet flushed must be flushed before `endMessage()` to be spoken. */
  protected abstract readonly flushesBeforeEnd: boolean;
  /** The turn is over: gives its socket (or its part of one) back. */
  protected abstract release(): void;
  /** The watchdog fired, just before the turn fails with `tts.timeout`. */
  protected onStall(): void {}

  /** Starts listening for the abort and sends the turn's first message. */
  protected begin(init: M): void {
    this.signal.addEventListener('abort', this.onAbort, { once: true });
    this.send(init);
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
      this.send(this.textMessage(chunk, false));
      return;
    }
    // Text and flush in one message, as the reference's example sends them (§1.1.2): one frame and one write instead of two.
    this.send(this.textMessage(chunk, true));
    this.flushed();
  }

  flush(): void {
    if (this.state !== 'open') return;
    this.send(this.flushMessage());
    this.flushed();
  }

  end(): void {
    if (this.state !== 'open') return;
    if (this.flushesBeforeEnd && this.unflushedText) this.flush();
    this.send(this.endMessage());
    this.state = 'ending';
    this.clearKeepAlive();
    // After the end message the service always answers, at least with the final.
    this.armWatchdog();
  }

  onServerMessage(msg: ServerMessage): void {
    if (this.state === 'closed') return;
    switch (msg.kind) {
      case 'audio':
        this.clearWatchdog();
        // After `end()` every silence until the final counts as a stall.
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
      // Closed normally after our end message without a final: all audio is in, so end as if final.
      this.queue.push({ type: 'final' });
      this.queue.end();
      this.shutdown();
      return;
    }
    this.failWith(closeError(code, reason));
  }

  failWith(error: ProviderError): void {
    if (this.state === 'closed') return;
    this.cancel();
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
    // Barge-in: what the service already sent for the turn is dropped on arrival.
    this.cancel();
    this.queue.drop();
    this.shutdown();
  }

  private cancel(): void {
    if (this.state !== 'open') return;
    const message = this.cancelMessage();
    if (message !== null) this.send(message);
  }

  private shutdown(): void {
    this.state = 'closed';
    this.clearWatchdog();
    this.clearKeepAlive();
    this.signal.removeEventListener('abort', this.onAbort);
    this.release();
  }

  private flushed(): void {
    if (this.unflushedText) this.armWatchdog();
    this.unflushedText = false;
  }

  private send(message: M): void {
    this.write(message);
    if (this.state === 'open') this.scheduleKeepAlive();
  }

  private armWatchdog(): void {
    if (this.watchdog !== null) return;
    const ms = this.timings.firstByteTimeoutMs;
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      this.onStall();
      this.failWith(tsError('tts.timeout', `no audio from ElevenLabs within ${ms} ms`, true));
    }, ms);
  }

  private clearWatchdog(): void {
    if (this.watchdog !== null) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  /** The keep-alive after `keepAliveMs` without sending, so a stream opened ahead of a slow LLM survives `inactivity_timeout` (§1.1.3). */
  private scheduleKeepAlive(): void {
    this.clearKeepAlive();
    this.keepAlive = setTimeout(() => {
      this.keepAlive = null;
      if (this.state === 'open') this.send(this.keepAliveMessage());
    }, this.timings.keepAliveMs);
    this.keepAlive.unref();
  }

  private clearKeepAlive(): void {
    if (this.keepAlive !== null) clearTimeout(this.keepAlive);
    this.keepAlive = null;
  }
}
