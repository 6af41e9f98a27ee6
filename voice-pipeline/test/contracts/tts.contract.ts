/**
 * Contract for a streaming TtsProvider and its simulator (STYLE.md §4): what goes over the
 * wire (ElevenLabs `stream-input` or `multi-stream-input`, reference/tts.md §1, §1.3), what
 * comes back through `events`, barge-in and failures. Call `ttsContract({ provider, simulator })` inside a test file that
 * starts the simulator; both are getters because the simulator starts in `beforeAll`.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { mulawDecode } from '../../src/audio/g711.js';
import { levelDbfs } from '../../src/audio/pcm.js';
import type { ElevenLabsSimulator } from '../../src/providers/elevenlabs/simulator.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { TtsEvent, TtsProvider, TtsStream, TtsStreamOptions } from '../../src/providers/types.js';

export interface TtsContractTarget {
  /** An adapter pointed at `simulator()`; the fault tests ask for a short first-byte timeout. */
  provider: (options?: { firstByteTimeoutMs?: number }) => TtsProvider;
  simulator: () => ElevenLabsSimulator;
  /** The socket the adapter speaks: a socket a stream (default) or a context a stream on a shared socket. */
  wire?: 'stream-input' | 'multi-stream-input';
}

type AudioEvent = Extract<TtsEvent, { type: 'audio' }>;

const BASE: TtsStreamOptions = { voiceId: 'voice-contract', outputFormat: 'pcm_16000' };

async function collect(stream: TtsStream): Promise<TtsEvent[]> {
  const events: TtsEvent[] = [];
  for await (const event of stream.events) events.push(event);
  return events;
}

function audioOf(events: TtsEvent[]): AudioEvent[] {
  return events.filter((e): e is AudioEvent => e.type === 'audio');
}

function totalBytes(events: TtsEvent[]): number {
  return audioOf(events).reduce((n, e) => n + e.audio.length, 0);
}

function joinedAlignment(events: TtsEvent[]): string {
  return audioOf(events)
    .map((e) => e.alignment?.chars.join('') ?? '')
    .join('');
}

const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function failureOf(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

/** Registers the TTS contract. */
export function ttsContract(target: TtsContractTarget): void {
  const sim = (): ElevenLabsSimulator => target.simulator();
  const wire = target.wire ?? 'stream-input';
  const multi = wire === 'multi-stream-input';
  /** The context of the last socket's first context (multi-stream-input), to spell the expected messages. */
  const contextId = (): string => sim().lastConnection!.contexts[0]!;
  const open = (options: Partial<TtsStreamOptions> = {}, signal = new AbortController().signal, provider = target.provider()): Promise<TtsStream> =>
    provider.open({ ...BASE, ...options }, signal);

  describe('TtsProvider contract', () => {
    beforeEach(() => sim().reset());

    describe('wire', () => {
      it('names voice, model, output format and language in the URL and sends the key in the header', async () => {
        const stream = await open({ voiceId: 'voice-abc', model: 'eleven_turbo_v2_5', outputFormat: 'ulaw_8000', language: 'de' });
        stream.end();
        await collect(stream);
        const rec = sim().lastConnection!;
        expect(rec.endpoint).toBe(wire);
        expect(rec.voiceId).toBe('voice-abc');
        expect(rec.query).toMatchObject({ model_id: 'eleven_turbo_v2_5', output_format: 'ulaw_8000', language_code: 'de' });
        expect(Number(rec.query.inactivity_timeout)).toBeGreaterThanOrEqual(1);
        expect(rec.headers['xi-api-key']).toBe(sim().apiKey);
      });

      it('initialises with a single space, snake_case voice settings and a low-latency chunk schedule', async () => {
        const stream = await open({ voiceSettings: { stability: 0.4, similarityBoost: 0.8, style: 0.1, useSpeakerBoost: true, speed: 1.1 } });
        stream.end();
        await collect(stream);
        const init = sim().lastConnection!.messages[0] as Record<string, unknown>;
        expect(init.text).toBe(' ');
        if (multi) expect(init.context_id).toBe(contextId());
        expect(init.voice_settings).toEqual({ stability: 0.4, similarity_boost: 0.8, style: 0.1, use_speaker_boost: true, speed: 1.1 });
        const schedule = (init.generation_config as { chunk_length_schedule: number[] }).chunk_length_schedule;
        expect(schedule[0]).toBeLessThan(120); // below the service default, for faster first audio
        expect(schedule.every((n) => n >= 50 && n <= 500)).toBe(true);
      });

      it('sends each text chunk ending with a space, then the flush, then the closing empty text', async () => {
        const stream = await open();
        stream.sendText('Hello');
        stream.sendText('there. ');
        stream.flush();
        stream.end();
        await collect(stream);
        const c = multi ? { context_id: contextId() } : {};
        // On multi-stream-input an empty text is no close: the flush carries none and the end is close_context (§1.3).
        const [flush, close] = multi ? [{ text: '', flush: true, ...c }, { close_context: true, ...c }] : [{ text: ' ', flush: true }, { text: '' }];
        expect(sim().lastConnection!.messages.slice(1)).toEqual([{ text: 'Hello ', ...c }, { text: 'there. ', ...c }, flush, close]);
      });

      it('sends a sentence and its flush as one message, and speaks it before end()', async () => {
        const stream = await open();
        stream.sendText('Your table', { flush: false });
        stream.sendText('is booked for seven.', { flush: true });
        const iterator = stream.events[Symbol.asyncIterator]();
        const first = await iterator.next();
        expect((first.value as TtsEvent).type).toBe('audio');
        // An empty text with flush is a plain flush, never the closing "".
        stream.sendText('', { flush: true });
        stream.end();
        for (let r = await iterator.next(); r.done !== true; r = await iterator.next());
        const c = multi ? { context_id: contextId() } : {};
        const [flush, close] = multi ? [{ text: '', flush: true, ...c }, { close_context: true, ...c }] : [{ text: ' ', flush: true }, { text: '' }];
        expect(sim().lastConnection!.messages.slice(1)).toEqual([{ text: 'Your table ', ...c }, { text: 'is booked for seven. ', flush: true, ...c }, flush, close]);
        expect(sim().lastConnection!.generations).toEqual(['Your table is booked for seven. ']);
      });
    });

    describe('results', () => {
      it('streams audio for a flushed sentence before end() is called', async () => {
        const stream = await open();
        stream.sendText('Your table is booked for seven. ');
        stream.flush();
        const iterator = stream.events[Symbol.asyncIterator]();
        const first = await iterator.next();
        expect(first.done).toBe(false);
        expect((first.value as TtsEvent).type).toBe('audio');
        // No end of the stream went out (stream-input's closing "", multi-stream-input's close_context).
        expect(sim().lastConnection!.messages.some((m) => (multi ? (m as { close_context?: boolean }).close_context === true : (m as { text?: string }).text === ''))).toBe(false);
        stream.end();
        let last: TtsEvent | undefined;
        for (let r = await iterator.next(); r.done !== true; r = await iterator.next()) last = r.value;
        expect(last).toEqual({ type: 'final' });
      });

      it('returns 16 kHz PCM whose duration fits the length of the text', async () => {
        const text = 'Thanks for calling, I can help you move your appointment to Friday morning.';
        const stream = await open({ outputFormat: 'pcm_16000' });
        stream.sendText(text);
        stream.end();
        const events = await collect(stream);
        for (const e of audioOf(events)) expect(e.audio.length % 2).toBe(0);
        const ms = totalBytes(events) / 2 / 16;
        expect(ms / text.length).toBeGreaterThan(25);
        expect(ms / text.length).toBeLessThan(150);
      });

      it('returns μ-law 8 kHz as raw G.711 that decodes to speech', async () => {
        const text = 'Please hold while I check the calendar.';
        const stream = await open({ outputFormat: 'ulaw_8000' });
        stream.sendText(text);
        stream.end();
        const events = await collect(stream);
        const bytes = Buffer.concat(audioOf(events).map((e) => e.audio));
        expect(bytes.subarray(0, 4).toString('latin1')).not.toBe('RIFF'); // headerless
        const ms = bytes.length / 8;
        expect(ms / text.length).toBeGreaterThan(25);
        expect(ms / text.length).toBeLessThan(150);
        expect(levelDbfs(mulawDecode(bytes))).toBeGreaterThan(-40);
        const pcm16 = await open({ outputFormat: 'pcm_16000' });
        pcm16.sendText(text);
        pcm16.end();
        // Same speech at twice the rate and two bytes a sample: four times the bytes, give or take resampling.
        expect(totalBytes(await collect(pcm16)) / bytes.length).toBeCloseTo(4, 1);
      });

      it('gives alignment whose characters join back to the text, and ends with final', async () => {
        const text = 'Sure, I can move that to Friday. ';
        const stream = await open();
        stream.sendText(text);
        stream.end();
        const events = await collect(stream);
        expect(events.at(-1)).toEqual({ type: 'final' });
        expect(events.filter((e) => e.type === 'final')).toHaveLength(1);
        expect(squash(joinedAlignment(events))).toBe(squash(text));
        for (const e of audioOf(events)) {
          if (e.alignment === null) continue;
          expect(e.alignment.startMs).toHaveLength(e.alignment.chars.length);
          expect(e.alignment.durationMs).toHaveLength(e.alignment.chars.length);
        }
      });

      it('returns two flushed sentences in the order they were sent', async () => {
        const stream = await open();
        stream.sendText('First, the weather. ');
        stream.flush();
        stream.sendText('Second, the traffic. ');
        stream.flush();
        stream.end();
        const events = await collect(stream);
        expect(squash(joinedAlignment(events))).toBe('First, the weather. Second, the traffic.');
        expect(sim().lastConnection!.generations.map(squash)).toEqual(['First, the weather.', 'Second, the traffic.']);
      });
    });

    describe('barge-in', () => {
      it(multi ? 'closes the context promptly on abort, keeping the socket, and ends events without an error' : 'closes the socket promptly on abort and ends events without an error', async () => {
        const controller = new AbortController();
        const stream = await open({}, controller.signal);
        stream.sendText('This is a long answer that the caller is about to interrupt, so most of it is never heard. ');
        stream.flush();
        const seen: TtsEvent[] = [];
        const consumed = (async () => {
          for await (const event of stream.events) {
            seen.push(event);
            if (seen.length === 1) controller.abort();
          }
        })();
        await expect(consumed).resolves.toBeUndefined();
        expect(seen).toHaveLength(1);
        if (multi) {
          const id = contextId();
          await until(() => sim().lastConnection!.messages.some((m) => (m as { close_context?: boolean }).close_context === true), 500);
          expect(sim().lastConnection!.messages.at(-1)).toEqual({ context_id: id, close_context: true });
          expect(sim().lastConnection!.closeCode).toBeNull();
        } else {
          await until(() => sim().lastConnection!.closeCode !== null, 500);
          expect(sim().lastConnection!.closedBy).toBe('client');
        }
        stream.sendText('ignored after abort ');
        stream.end();
      });

      it('rejects open with an AbortError when the signal is already aborted', async () => {
        const controller = new AbortController();
        controller.abort();
        await expect(open({}, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
      });
    });

    describe('faults', () => {
      it('reports a rejected key as tts.unauthorized, not retryable', async () => {
        sim().setFaults({ rejectAuth: true });
        const error = await failureOf(open());
        expect(error).toMatchObject({ capability: 'tts', code: 'tts.unauthorized', retryable: false });
      });

      it('reports a dropped connection as tts.connection_lost, retryable', async () => {
        sim().setFaults({ dropAfterMs: 100 });
        const stream = await open();
        stream.sendText('Hello there. ');
        const error = await failureOf(collect(stream));
        expect(error).toMatchObject({ capability: 'tts', code: 'tts.connection_lost', retryable: true });
      });

      it('reports a stalled service as tts.timeout within the configured first-byte timeout', async () => {
        sim().setFaults({ neverRespond: true });
        const stream = await open({}, new AbortController().signal, target.provider({ firstByteTimeoutMs: 300 }));
        stream.sendText('Is anyone there? ');
        stream.flush();
        const started = Date.now();
        const error = await failureOf(collect(stream));
        expect(error).toMatchObject({ capability: 'tts', code: 'tts.timeout', retryable: true });
        expect(Date.now() - started).toBeGreaterThanOrEqual(250);
        expect(Date.now() - started).toBeLessThan(1500);
      });

      it('reports an error message from the service as a ProviderError with its code', async () => {
        sim().setFaults({ errorMessage: true });
        const stream = await open();
        stream.sendText('Hello there. ');
        stream.flush();
        const error = await failureOf(collect(stream));
        expect(error).toMatchObject({ capability: 'tts', code: 'tts.quota_exceeded', retryable: false });
      });
    });
  });
}
