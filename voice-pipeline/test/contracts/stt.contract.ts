/**
 * The speech-to-text contract (STYLE.md §4): every SttProvider adapter, run against its
 * simulator with real caller speech, must put the right things on the wire and give back
 * the right events. A provider's integration test calls `sttContract(name, factory)`; the
 * factory wraps the provider's simulator in the neutral `SttContractSimulator` view.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callerSpeechMulaw, coughMulaw, silenceMulaw } from '../../src/audio/caller-speech.js';
import { concatBytes } from '../../src/audio/pcm.js';
import type { SttEvent, SttProvider, SttStream, SttStreamOptions } from '../../src/providers/types.js';

/** What the contract needs to see of one connection, in provider-neutral terms. */
export interface SttWireConnection {
  query: URLSearchParams;
  authorization: string | undefined;
  audioBytes: number;
  /** Control messages in order: `finalize`, `close`, `keep-alive`, or the provider's own name for others. */
  controls: string[];
  closed: boolean;
}

export interface SttContractSimulator {
  /** Each speech segment heard on the call tagged `call_sid: callKey` becomes the next line. */
  setScript(callKey: string, utterances: string[]): void;
  /** Connections in order of arrival. */
  connections(): SttWireConnection[];
}

export interface SttContractContext {
  provider: SttProvider;
  simulator: SttContractSimulator;
  /** The Authorization header the adapter must send. */
  expectedAuthorization: string;
  /** Query pairs that must appear on the wire for `options` (each value once or more for repeated keys). */
  expectedQuery(options: SttStreamOptions): Array<[string, string]>;
  /** Stops the simulator. */
  close(): Promise<void>;
}

// ---------- helpers, also used by provider-specific fault tests ----------

/** Reads a stream's events in the background so a test can wait for what it expects. */
export class EventCollector {
  readonly events: SttEvent[] = [];
  done = false;
  error: unknown = undefined;
  private wake: (() => void)[] = [];

  constructor(stream: SttStream) {
    void (async () => {
      try {
        for await (const e of stream.events) {
          this.events.push(e);
          this.notify();
        }
      } catch (e) {
        this.error = e;
      } finally {
        this.done = true;
        this.notify();
      }
    })();
  }

  private notify(): void {
    for (const w of this.wake.splice(0)) w();
  }

  /** Resolves once `predicate` holds over the events so far; rejects after `timeoutMs`. */
  async waitFor(predicate: (events: SttEvent[], c: EventCollector) => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.events, this)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; events: ${JSON.stringify(this.events.map(brief))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake.push(() => (clearTimeout(t), resolve()));
      });
    }
  }

  /** Resolves when the iterable ended or threw. */
  ended(timeoutMs = 5_000): Promise<void> {
    return this.waitFor((_e, c) => c.done, timeoutMs, 'the events iterable to end');
  }

  transcripts(): Extract<SttEvent, { type: 'transcript' }>[] {
    return this.events.filter((e): e is Extract<SttEvent, { type: 'transcript' }> => e.type === 'transcript');
  }

  finals(): Extract<SttEvent, { type: 'transcript' }>[] {
    return this.transcripts().filter((e) => e.isFinal && e.text.trim() !== '');
  }
}

function brief(e: SttEvent): string {
  return e.type === 'transcript' ? `${e.isFinal ? (e.speechFinal ? 'SF' : 'F') : 'I'}:${e.text}` : e.type;
}

/**
 * Sends 8 kHz μ-law in 20 ms frames, `speedup` times faster than real time (the
 * simulators run on the audio clock, so only wall-clock-sensitive tests need 1).
 */
export async function sendPaced(stream: SttStream, audio: Uint8Array, speedup = 4): Promise<void> {
  const frameBytes = 160;
  const framesPerTick = Math.max(1, Math.round(speedup));
  for (let i = 0, n = 0; i < audio.length; i += frameBytes, n++) {
    stream.send(audio.subarray(i, Math.min(audio.length, i + frameBytes)));
    if (n % framesPerTick === framesPerTick - 1) await new Promise((r) => setTimeout(r, 20));
  }
}

/** The options every contract stream uses; `tags.call_sid` picks the script. */
export function contractOptions(callKey: string, overrides: Partial<SttStreamOptions> = {}): SttStreamOptions {
  return {
    encoding: 'mulaw',
    sampleRateHz: 8000,
    model: 'nova-2-phonecall',
    language: 'en-US',
    punctuate: true,
    smartFormat: false,
    profanityFilter: false,
    interimResults: true,
    endpointingMs: 300,
    utteranceEndMs: 1000,
    tags: { call_sid: callKey, agent: 'agt_contract' },
    ...overrides,
  };
}

// Lines with committed speech fixtures, so the contract hears speech even without espeak-ng.
const LINE_A = 'Hi, I would like to book a table for two tonight.';
const LINE_B = "Seven o'clock works for me.";

/** Registers the STT contract tests for one adapter. */
export function sttContract(name: string, factory: () => Promise<SttContractContext>): void {
  describe(`${name} STT contract`, () => {
    let ctx: SttContractContext;
    const clips = new Map<string, Uint8Array>();
    const speech = (text: string): Uint8Array => clips.get(text)!;

    beforeAll(async () => {
      ctx = await factory();
      for (const text of [LINE_A, LINE_B]) clips.set(text, await callerSpeechMulaw(text));
    });
    afterAll(async () => {
      await ctx?.close();
    });

    async function openCall(lines: string[], overrides: Partial<SttStreamOptions> = {}) {
      const callKey = `CA${randomUUID().replaceAll('-', '')}`;
      ctx.simulator.setScript(callKey, lines);
      const options = contractOptions(callKey, overrides);
      const before = ctx.simulator.connections().length;
      const stream = await ctx.provider.open(options, new AbortController().signal);
      const events = new EventCollector(stream);
      const wire = (): SttWireConnection => ctx.simulator.connections()[before]!;
      return { stream, events, options, wire };
    }

    it('sends the stream options as query parameters and authenticates with the API key', async () => {
      const { stream, events, options, wire } = await openCall([]);
      await stream.close();
      await events.ended();
      const conn = wire();
      expect(conn.authorization).toBe(ctx.expectedAuthorization);
      for (const [key, value] of ctx.expectedQuery(options)) expect(conn.query.getAll(key), `query ${key}`).toContain(value);
      expect(events.error).toBeUndefined();
    });

    it('reports speech start, interim results, then a final with the scripted text and ordered word timings', async () => {
      const { stream, events, wire } = await openCall([LINE_A]);
      const audio = concatBytes([silenceMulaw(200), speech(LINE_A), silenceMulaw(1500)]);
      await sendPaced(stream, audio);
      await events.waitFor((es) => es.some((e) => e.type === 'utterance-end'), 5_000, 'utterance-end');
      await stream.close();
      await events.ended();
      expect(events.error).toBeUndefined();

      const es = events.events;
      const firstTranscript = es.findIndex((e) => e.type === 'transcript' && e.text !== '');
      const started = es.findIndex((e) => e.type === 'speech-started');
      expect(started).toBeGreaterThanOrEqual(0);
      expect(started).toBeLessThan(firstTranscript);
      const interims = events.transcripts().filter((e) => !e.isFinal);
      expect(interims.length).toBeGreaterThan(0);
      const finals = events.finals();
      expect(finals).toHaveLength(1);
      const final = finals[0]!;
      expect(es.indexOf(interims[0]!)).toBeLessThan(es.indexOf(final));
      expect(final.text).toBe(LINE_A);
      expect(final.speechFinal).toBe(true);
      expect(final.confidence).toBeGreaterThan(0.5);
      expect(final.words.map((w) => w.word).join(' ')).toBe(LINE_A);

      // Word timings: ordered, inside the result's span and inside the audio where speech was.
      const speechStartMs = (es[started] as { atMs: number }).atMs;
      expect(speechStartMs).toBeGreaterThanOrEqual(150);
      let previousEnd = 0;
      for (const w of final.words) {
        expect(w.startMs).toBeGreaterThanOrEqual(previousEnd);
        expect(w.endMs).toBeGreaterThan(w.startMs);
        expect(w.startMs).toBeGreaterThanOrEqual(Math.max(final.startMs, speechStartMs - 20));
        expect(w.endMs).toBeLessThanOrEqual(final.endMs);
        expect(w.endMs).toBeLessThanOrEqual(200 + speech(LINE_A).length / 8 + 20);
        previousEnd = w.endMs;
      }
      const end = es.find((e) => e.type === 'utterance-end') as { lastWordEndMs: number };
      expect(es.indexOf(end as SttEvent)).toBeGreaterThan(es.indexOf(final));
      expect(Math.abs(end.lastWordEndMs - previousEnd)).toBeLessThanOrEqual(20);
      expect(wire().audioBytes).toBe(audio.length);
    });

    it('gives no transcript for a cough and keeps the script line for the speech after it', async () => {
      const { stream, events } = await openCall([LINE_A]);
      await sendPaced(stream, concatBytes([silenceMulaw(200), coughMulaw(), silenceMulaw(800)]));
      await sendPaced(stream, concatBytes([speech(LINE_A), silenceMulaw(600)]));
      await events.waitFor(() => events.finals().length === 1, 5_000, 'the final');
      await stream.close();
      await events.ended();
      const cough = events.transcripts().filter((e) => e.endMs <= 1200);
      expect(cough.every((e) => e.text.trim() === '')).toBe(true);
      expect(events.finals().map((e) => e.text)).toEqual([LINE_A]);
    });

    it('turns two utterances in one stream into the two script lines in order', async () => {
      const { stream, events } = await openCall([LINE_A, LINE_B]);
      await sendPaced(stream, concatBytes([speech(LINE_A), silenceMulaw(700), speech(LINE_B), silenceMulaw(700)]));
      await events.waitFor(() => events.finals().length === 2, 5_000, 'two finals');
      await stream.close();
      await events.ended();
      const finals = events.finals();
      expect(finals.map((e) => e.text)).toEqual([LINE_A, LINE_B]);
      expect(finals[1]!.startMs).toBeGreaterThanOrEqual(finals[0]!.endMs);
      expect(finals.every((e) => e.speechFinal)).toBe(true);
      expect(events.events.filter((e) => e.type === 'speech-started')).toHaveLength(2);
    });

    it('finalize() makes the provider finalise before its endpointer would', async () => {
      const { stream, events, wire } = await openCall([LINE_B], { endpointingMs: 2_000 });
      await sendPaced(stream, speech(LINE_B));
      stream.finalize();
      await events.waitFor(() => events.finals().length === 1, 3_000, 'the final after finalize');
      const final = events.finals()[0]!;
      expect(final.text).toBe(LINE_B);
      expect(final.speechFinal).toBe(false);
      await stream.close();
      await events.ended();
      expect(wire().controls).toContain('finalize');
      expect(wire().controls.indexOf('finalize')).toBeLessThan(wire().controls.indexOf('close'));
    });

    it('close() flushes, sends the close message and ends the events iterable without error', async () => {
      // Endpointing longer than the clip's trailing silence: only the flush can produce the final.
      const { stream, events, wire } = await openCall([LINE_B], { endpointingMs: 2_000 });
      const audio = speech(LINE_B);
      await sendPaced(stream, audio);
      await stream.close();
      await events.ended();
      expect(events.error).toBeUndefined();
      expect(events.finals().map((e) => e.text)).toEqual([LINE_B]);
      const conn = wire();
      expect(conn.controls[conn.controls.length - 1]).toBe('close');
      expect(conn.audioBytes).toBe(audio.length);
      expect(conn.closed).toBe(true);
      stream.send(silenceMulaw(20)); // after close: ignored, never throws
    });
  });
}
