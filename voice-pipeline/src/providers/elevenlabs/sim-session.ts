/**
 * The simulator's side of one `stream-input` socket (reference/tts.md §1): checks the first
 * message and the key, buffers text until the chunk schedule, a flush or the closing `""`,
 * and answers each generation with audio chunks in order, then `isFinal` and close 1000.
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { renderGeneration } from './sim-audio.js';
import type { RawFormatSpec } from './wire.js';

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

const DEFAULT_SCHEDULE = [120, 160, 250, 290];
/** About 200 ms of audio per `audio` message, like the real service's chunking. */
const CHUNK_MS = 200;

export class SimSession {
  private readonly ws: WebSocket;
  private readonly setup: SimSessionSetup;
  private initialised = false;
  private closing = false;
  private closed = false;
  private buffer = '';
  private schedule = DEFAULT_SCHEDULE;
  private generationIndex = 0;
  private chain: Promise<void> = Promise.resolve();
  private inactivity: NodeJS.Timeout | null = null;
  private dropTimer: NodeJS.Timeout | null = null;
  private erroredOnce = false;

  constructor(ws: WebSocket, setup: SimSessionSetup) {
    this.ws = ws;
    this.setup = setup;
    ws.on('message', (data, isBinary) => this.onMessage(isBinary ? '' : data.toString()));
    ws.on('close', (code) => {
      this.closed = true;
      this.clearTimers();
      if (setup.record.closeCode === null) {
        setup.record.closeCode = code;
        setup.record.closedBy = 'client';
      }
    });
    ws.on('error', () => {});
    const dropAfterMs = setup.faults().dropAfterMs;
    if (dropAfterMs !== null) {
      this.dropTimer = setTimeout(() => {
        setup.record.closeCode = 1006;
        setup.record.closedBy = 'server';
        setup.tcp.destroy();
      }, dropAfterMs);
    }
    this.touch();
  }

  private onMessage(raw: string): void {
    if (this.closed) return;
    let msg: unknown = raw;
    try {
      msg = JSON.parse(raw);
    } catch {
      // recorded as text below
    }
    this.setup.record.messages.push(msg);
    this.touch();
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
    const messageKey = typeof m.xi_api_key === 'string' ? m.xi_api_key : typeof m['xi-api-key'] === 'string' ? m['xi-api-key'] : undefined;
    const key = this.setup.headerKey ?? messageKey;
    if (key !== this.setup.apiKey || this.setup.faults().rejectAuth !== false) {
      // Auth failure after the first message is one of the two behaviours clients must handle (§1.2).
      this.closeWith(1008, key === undefined ? 'Authentication failed: no API key (send the xi-api-key header or xi_api_key)' : 'Authentication failed: invalid API key');
      return;
    }
    const config = m.generation_config as { chunk_length_schedule?: unknown } | undefined;
    const schedule = config?.chunk_length_schedule;
    if (schedule !== undefined) {
      if (!Array.isArray(schedule) || schedule.length === 0 || !schedule.every((n) => Number.isInteger(n) && n >= 50 && n <= 500)) {
        this.fail('invalid_input_message', 'generation_config.chunk_length_schedule values must be integers between 50 and 500.');
        return;
      }
      this.schedule = schedule as number[];
    }
    this.initialised = true;
  }

  /** Queues generation of everything buffered; blank buffers (keep-alives) produce nothing. */
  private generate(): void {
    const text = this.buffer;
    this.buffer = '';
    if (text.trim().length === 0) return;
    this.generationIndex++;
    this.enqueue(async () => {
      const faults = this.setup.faults();
      if (faults.neverRespond) return;
      if (faults.errorMessage !== false) {
        const e = faults.errorMessage === true ? { error: 'quota_exceeded', message: 'This request exceeds your quota. You have 0 credits remaining.' } : faults.errorMessage;
        this.fail(e.error, e.message);
        return;
      }
      if (faults.firstByteDelayMs > 0) await new Promise((r) => setTimeout(r, faults.firstByteDelayMs));
      if (this.closed) return;
      const chunks = await renderGeneration(text, this.setup.format, CHUNK_MS);
      this.setup.record.generations.push(text);
      this.setup.record.charactersSynthesised += text.length;
      for (const chunk of chunks) {
        if (this.closed) return;
        // No separate text normalisation in the simulator: normalizedAlignment equals alignment.
        this.sendJson({ audio: Buffer.from(chunk.audio).toString('base64'), isFinal: false, alignment: chunk.alignment, normalizedAlignment: chunk.alignment });
        // Yield between chunks so a client's close or abort stops the generation.
        await new Promise((r) => setImmediate(r));
      }
    });
  }

  /** Generations run one at a time, so audio always arrives in text order (§1.2). */
  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(() => (this.closed ? undefined : step())).catch(() => this.closeWith(1011, 'Internal error while generating audio'));
  }

  /** Error message then close, the shape observed from the real service (§1.2). */
  private fail(error: string, message: string): void {
    if (this.erroredOnce) return;
    this.erroredOnce = true;
    this.sendJson({ message, error, code: 1008 });
    this.closeWith(1008, message);
  }

  private touch(): void {
    if (this.inactivity !== null) clearTimeout(this.inactivity);
    const s = this.setup.inactivityTimeoutS;
    this.inactivity = setTimeout(() => {
      this.closeWith(1008, `Have not received a new text input within the timeout of ${s} seconds. Streaming input terminates the websocket connection after ${s} seconds of inactivity.`);
    }, s * 1000);
  }

  private sendJson(message: object): void {
    if (!this.closed && this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  private closeWith(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.setup.record.closeCode = code;
    this.setup.record.closedBy = 'server';
    // Close reasons are limited to 123 bytes by RFC 6455.
    this.ws.close(code, Buffer.from(reason).subarray(0, 123).toString());
  }

  private clearTimers(): void {
    if (this.inactivity !== null) clearTimeout(this.inactivity);
    if (this.dropTimer !== null) clearTimeout(this.dropTimer);
    this.inactivity = null;
    this.dropTimer = null;
  }
}
