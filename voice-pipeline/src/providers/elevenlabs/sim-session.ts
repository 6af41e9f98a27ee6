/**
 * The simulator's side of one `stream-input` socket (reference/tts.md §1): checks the first
 * message and the key, buffers text until the chunk schedule, a flush or the closing `""`,
 * and answers each generation with audio chunks in order, then `isFinal` and close 1000.
 */
import type { Socket } from 'node:net';
import { DEFAULT_SCHEDULE, SimSocket } from './sim-socket.js';
import type { RawFormatSpec } from '../../audio/output-formats.js';

/** Faults the simulator can inject; see `ElevenLabsSimulator.setFaults`. */
export interface ElevenLabsSimFaults {
  /** Delay before the first audio of every generation. */
  firstByteDelayMs: number;
  /**
   * Behave as if the key were wrong: `true`/`'upgrade'` answers 401 at the upgrade when the
   * key came in the header (else closes 1008 after the first message); `'first-message'`
   * always accepts the upgrade and closes 1008 after the first message.
   */
  rejectAuth: boolean | 'upgrade' | 'first-message';
  /** Destroy the TCP socket this long after the upgrade, without a close frame. */
  dropAfterMs: number | null;
  /** Accept text but never send audio, `isFinal` or a close (a stalled TTS). */
  neverRespond: boolean;
  /** At the first generation send `{"message","error","code":1008}` and close 1008; `true` means `quota_exceeded`. */
  errorMessage: boolean | { error: string; message: string };
}

export const DEFAULT_FAULTS: Readonly<ElevenLabsSimFaults> = Object.freeze({
  firstByteDelayMs: 0,
  rejectAuth: false,
  dropAfterMs: null,
  neverRespond: false,
  errorMessage: false,
});

/** What the simulator saw on one socket, in order. */
export interface ElevenLabsSimConnection {
  id: number;
  /** `stream-input` (one generation stream) or `multi-stream-input` (contexts, reference/tts.md §1.3). */
  endpoint: 'stream-input' | 'multi-stream-input';
  voiceId: string;
  query: Record<string, string>;
  /** Upgrade request headers, lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  /** Every client text frame: parsed JSON, or the raw text when it was not JSON. */
  messages: unknown[];
  /** Text of each generation, in the order generated (over all contexts on `multi-stream-input`). */
  generations: string[];
  /** `multi-stream-input`: each context's id, in the order created; empty on `stream-input`. */
  contexts: string[];
  charactersSynthesised: number;
  /** Close code as the server saw it (1005 = client closed without a code, 1006 = no close frame), `null` while open. */
  closeCode: number | null;
  closedBy: 'client' | 'server' | null;
}

/** Per-socket settings fixed at the upgrade. */
export interface SimSessionSetup {
  record: ElevenLabsSimConnection;
  format: RawFormatSpec;
  apiKey: string;
  /** Key from the `xi-api-key` header, if any (a wrong one was already refused with 401). */
  headerKey: string | undefined;
  inactivityTimeoutS: number;
  faults: () => ElevenLabsSimFaults;
  tcp: Socket;
}

export class SimSession extends SimSocket {
  private initialised = false;
  private closing = false;
  private buffer = '';
  private schedule = DEFAULT_SCHEDULE;
  private generationIndex = 0;
  private chain: Promise<void> = Promise.resolve();

  protected onClientMessage(msg: unknown): void {
    if (this.closing) return;
    if (msg === null || typeof msg !== 'object' || typeof (msg as { text?: unknown }).text !== 'string') {
      this.fail('invalid_input_message', 'Could not parse input message: expected a JSON object with a string `text`.');
      return;
    }
    const m = msg as Record<string, unknown> & { text: string };
    if (!this.initialised) {
      this.initialise(m);
      return;
    }
    if (m.text === '') {
      // Close: generate what is left, then isFinal, then close 1000 (§1.1.4).
      this.closing = true;
      this.generate();
      this.enqueue(async () => {
        if (this.setup.faults().neverRespond) return;
        this.sendJson({ isFinal: true });
        this.closeWith(1000, '');
      });
      return;
    }
    this.buffer += m.text;
    const threshold = this.schedule[Math.min(this.generationIndex, this.schedule.length - 1)]!;
    if (m.flush === true || this.buffer.length >= threshold || (m.try_trigger_generation === true && this.buffer.length >= 50)) {
      this.generate();
    }
  }

  private initialise(m: Record<string, unknown> & { text: string }): void {
    if (m.text !== ' ') {
      this.fail('invalid_input_message', 'The first message must initialise the stream with text " ".');
      return;
    }
    if (!this.authenticate(m)) return;
    const schedule = this.scheduleOf(m);
    if (schedule === null) return;
    this.schedule = schedule;
    this.initialised = true;
  }

  /** Queues generation of everything buffered; blank buffers (keep-alives) produce nothing. */
  private generate(): void {
    const text = this.buffer;
    this.buffer = '';
    if (text.trim().length === 0) return;
    this.generationIndex++;
    this.enqueue(() => this.speak(text));
  }

  /** Generations run one at a time, so audio always arrives in text order (§1.2). */
  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(() => (this.closed ? undefined : step())).catch(() => this.closeWith(1011, 'Internal error while generating audio'));
  }
}
