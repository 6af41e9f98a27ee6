/**
 * What the simulator's `stream-input` and `multi-stream-input` sockets share (reference/tts.md
 * §1): recording every client frame, the socket-level inactivity timeout, the drop fault, the
 * key check, the chunk schedule's validation, error-then-close, and rendering one generation
 * as `audio` chunks with the faults applied. Each endpoint's own message handling is in its
 * subclass (`sim-session.ts`, `sim-multi-session.ts`).
 */
import type { WebSocket } from 'ws';
import { renderGeneration } from './sim-audio.js';
import type { SimSessionSetup } from './sim-session.js';

export const DEFAULT_SCHEDULE = [120, 160, 250, 290];
/** About 200 ms of audio per `audio` message, like the real service's chunking. */
const CHUNK_MS = 200;

export abstract class SimSocket {
  protected readonly ws: WebSocket;
  protected readonly setup: SimSessionSetup;
  protected closed = false;
  private inactivity: NodeJS.Timeout | null = null;
  private dropTimer: NodeJS.Timeout | null = null;
  private erroredOnce = false;

  constructor(ws: WebSocket, setup: SimSessionSetup) {
    this.ws = ws;
    this.setup = setup;
    ws.on('message', (data, isBinary) => this.receive(isBinary ? '' : data.toString()));
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

  /** One client frame, already recorded (parsed JSON, or the raw text when it was not JSON). */
  protected abstract onClientMessage(msg: unknown): void;

  private receive(raw: string): void {
    if (this.closed) return;
    let msg: unknown = raw;
    try {
      msg = JSON.parse(raw);
    } catch {
      // recorded as text
    }
    this.setup.record.messages.push(msg);
    this.touch();
    this.onClientMessage(msg);
  }

  /** The key from the header or, without one, from the message (`xi_api_key`/`xi-api-key`); closes 1008 and answers false when wrong. */
  protected authenticate(m: Record<string, unknown>): boolean {
    const messageKey = typeof m.xi_api_key === 'string' ? m.xi_api_key : typeof m['xi-api-key'] === 'string' ? m['xi-api-key'] : undefined;
    const key = this.setup.headerKey ?? messageKey;
    if (key !== this.setup.apiKey || this.setup.faults().rejectAuth !== false) {
      // Auth failure after the first message is one of the two behaviours clients must handle (§1.2).
      this.closeWith(1008, key === undefined ? 'Authentication failed: no API key (send the xi-api-key header or xi_api_key)' : 'Authentication failed: invalid API key');
      return false;
    }
    return true;
  }

  /** `generation_config.chunk_length_schedule` of an opening message, the default without one; `null` (and the socket failed) when invalid. */
  protected scheduleOf(m: Record<string, unknown>): number[] | null {
    const config = m.generation_config as { chunk_length_schedule?: unknown } | undefined;
    const given = config?.chunk_length_schedule;
    if (given === undefined) return DEFAULT_SCHEDULE;
    if (!Array.isArray(given) || given.length === 0 || !given.every((n) => Number.isInteger(n) && n >= 50 && n <= 500)) {
      this.fail('invalid_input_message', 'generation_config.chunk_length_schedule values must be integers between 50 and 500.');
      return null;
    }
    return given as number[];
  }

  /**
   * Speaks one generation's text as `audio` messages (with `contextId` when given), after the
   * faults: nothing at all (`neverRespond`), the error and close (`errorMessage`), a first-byte
   * delay. Stops between chunks once the socket closed.
   */
  protected async speak(text: string, contextId?: string): Promise<void> {
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
      const message = { audio: Buffer.from(chunk.audio).toString('base64'), isFinal: false, alignment: chunk.alignment, normalizedAlignment: chunk.alignment };
      this.sendJson(contextId === undefined ? message : { ...message, contextId });
      // Yield between chunks so a client's close or abort stops the generation.
      await new Promise((r) => setImmediate(r));
    }
  }

  /** Error message (for no context) then close, the shape observed from the real service (§1.2). */
  protected fail(error: string, message: string): void {
    if (this.erroredOnce) return;
    this.erroredOnce = true;
    this.sendJson({ message, error, code: 1008 });
    this.closeWith(1008, message);
  }

  protected sendJson(message: object): void {
    if (!this.closed && this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  protected closeWith(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.setup.record.closeCode = code;
    this.setup.record.closedBy = 'server';
    // Close reasons are limited to 123 bytes by RFC 6455.
    this.ws.close(code, Buffer.from(reason).subarray(0, 123).toString());
  }

  /** Inactivity is counted for the socket: no message at all for `inactivity_timeout` seconds closes it 1008. */
  private touch(): void {
    if (this.inactivity !== null) clearTimeout(this.inactivity);
    const s = this.setup.inactivityTimeoutS;
    this.inactivity = setTimeout(() => {
      this.closeWith(1008, `Have not received a new text input within the timeout of ${s} seconds. Streaming input terminates the websocket connection after ${s} seconds of inactivity.`);
    }, s * 1000);
  }

  private clearTimers(): void {
    if (this.inactivity !== null) clearTimeout(this.inactivity);
    if (this.dropTimer !== null) clearTimeout(this.dropTimer);
    this.inactivity = null;
    this.dropTimer = null;
  }
}
