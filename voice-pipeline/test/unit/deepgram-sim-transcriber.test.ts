import { describe, expect, it } from 'vitest';
import { pcm16ToBytesLE } from '../../src/audio/pcm.js';
import { DEFAULT_TUNING, SimTranscriber } from '../../src/providers/deepgram/sim-transcriber.js';
import type { DeepgramResults, DeepgramServerMessage, ListenSettings } from '../../src/providers/deepgram/wire.js';
import { listenQuerySchema } from '../../src/providers/deepgram/wire.js';

const RATE = 16000;

/** A 300 Hz tone at about -9 dBFS: loud enough for the energy VAD, like speech. */
function tone(ms: number): Int16Array {
  const n = (ms * RATE) / 1000;
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(12000 * Math.sin((2 * Math.PI * 300 * i) / RATE));
  return out;
}
const silence = (ms: number): Int16Array => new Int16Array((ms * RATE) / 1000);
function bytes(...parts: Int16Array[]): Uint8Array {
  const total = parts.reduce((s, p) => s + p.length, 0);
  const pcm = new Int16Array(total);
  let at = 0;
  for (const p of parts) {
    pcm.set(p, at);
    at += p.length;
  }
  return pcm16ToBytesLE(pcm).slice();
}

function transcriber(query: Record<string, string>, lines: string[] = ['Hello there, Sam.', 'Second line.']) {
  const settings: ListenSettings = listenQuerySchema.parse({ encoding: 'linear16', sample_rate: String(RATE), ...query });
  const messages: DeepgramServerMessage[] = [];
  const script = [...lines];
  let taken = 0;
  const t = new SimTranscriber(
    settings,
    DEFAULT_TUNING,
    () => {
      taken++;
      return script.shift() ?? 'fallback';
    },
    (m) => messages.push(m),
    { request_id: 'req-1' },
  );
  return { t, messages, taken: () => taken };
}

const results = (ms: DeepgramServerMessage[]): DeepgramResults[] => ms.filter((m): m is DeepgramResults => m.type === 'Results');
const finals = (ms: DeepgramServerMessage[]): DeepgramResults[] => results(ms).filter((m) => m.is_final);
const text = (m: DeepgramResults): string => m.channel.alternatives[0]!.transcript;

describe('SimTranscriber (Deepgram simulator recogniser)', () => {
  const q = { interim_results: 'true', endpointing: '300', utterance_end_ms: '1000', vad_events: 'true', punctuate: 'true' };

  it('works on the audio clock: one burst gives exactly the messages 20 ms frames give', () => {
    const audio = bytes(silence(100), tone(900), silence(1500));
    const burst = transcriber(q);
    burst.t.audio(audio);
    const framed = transcriber(q);
    for (let i = 0; i < audio.length; i += 640) framed.t.audio(audio.subarray(i, i + 640));
    expect(burst.messages).toEqual(framed.messages);
    expect(burst.messages.map((m) => (m.type === 'Results' ? `${m.is_final ? 'F' : 'I'}` : m.type))).toEqual(['SpeechStarted', 'I', 'I', 'I', 'I', 'F', 'UtteranceEnd']);
  });

  it('reassembles linear16 samples split at odd byte offsets', () => {
    const audio = bytes(tone(600), silence(500));
    const whole = transcriber(q);
    whole.t.audio(audio);
    const odd = transcriber(q);
    for (let i = 0; i < audio.length; i += 333) odd.t.audio(audio.subarray(i, i + 333));
    expect(odd.messages).toEqual(whole.messages);
    expect(odd.t.audioMs).toBe(1100);
  });

  it('times the final at the segment: SpeechStarted at onset, words inside the speech, UtteranceEnd after utterance_end_ms', () => {
    const { t, messages } = transcriber(q);
    t.audio(bytes(silence(200), tone(1000), silence(1400)));
    const started = messages.find((m) => m.type === 'SpeechStarted');
    expect(started).toMatchObject({ timestamp: 0.2 });
    const [final] = finals(messages);
    expect(final).toMatchObject({ is_final: true, speech_final: true });
    expect(text(final!)).toBe('Hello there, Sam.');
    const words = final!.channel.alternatives[0]!.words;
    expect(words.map((w) => w.word)).toEqual(['hello', 'there', 'sam']);
    expect(words.map((w) => w.punctuated_word)).toEqual(['Hello', 'there,', 'Sam.']);
    expect(words[0]!.start).toBe(0.2);
    expect(words[2]!.end).toBeLessThanOrEqual(1.2);
    for (const w of words) {
      expect(w.confidence).toBeGreaterThanOrEqual(0.9);
      expect(w.confidence).toBeLessThanOrEqual(0.99);
    }
    // Final after 300 ms of silence, UtteranceEnd 1000 ms after the last word ended.
    expect(final!.start + final!.duration).toBeCloseTo(1.5, 3);
    const ue = messages.find((m) => m.type === 'UtteranceEnd');
    expect(ue).toMatchObject({ last_word_end: words[2]!.end });
  });

  it('reveals the line progressively in interims', () => {
    const { t, messages } = transcriber(q, ['one two three four five six']);
    t.audio(bytes(tone(1600), silence(400)));
    const interims = results(messages).filter((m) => !m.is_final).map(text);
    expect(interims.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < interims.length; i++) expect(interims[i]!.startsWith(interims[i - 1]!)).toBe(true);
    expect(interims[0]!.split(' ').length).toBeLessThan(6);
  });

  it('treats a burst shorter than minSpeechMs as noise: an empty final and no script line used', () => {
    const { t, messages, taken } = transcriber(q);
    t.audio(bytes(silence(100), tone(100), silence(600)));
    expect(taken()).toBe(0);
    expect(finals(messages).map(text)).toEqual(['']);
    expect(messages.some((m) => m.type === 'UtteranceEnd')).toBe(false);
  });

  it('does not send UtteranceEnd when speech resumes within utterance_end_ms', () => {
    const { t, messages } = transcriber(q);
    t.audio(bytes(tone(600), silence(600), tone(600), silence(1400)));
    expect(finals(messages).map(text)).toEqual(['Hello there, Sam.', 'Second line.']);
    expect(messages.filter((m) => m.type === 'UtteranceEnd')).toHaveLength(1);
  });

  it('answers Finalize with a from_finalize final of the segment, or an empty one when nothing is in progress', () => {
    const { t, messages } = transcriber(q);
    t.finalize();
    t.audio(bytes(tone(600)));
    t.finalize();
    const fs = finals(messages);
    expect(fs.map(text)).toEqual(['', 'Hello there, Sam.']);
    expect(fs.every((m) => m.from_finalize === true && m.speech_final === false)).toBe(true);
  });

  it('with endpointing=false still finalises after a long pause, without speech_final', () => {
    const { t, messages } = transcriber({ ...q, endpointing: 'false' });
    t.audio(bytes(tone(600), silence(400)));
    expect(finals(messages)).toHaveLength(0);
    t.audio(bytes(silence(400)));
    expect(finals(messages)).toMatchObject([{ speech_final: false }]);
  });

  it('without punctuate or smart_format gives lower-case words and no punctuated_word', () => {
    const { t, messages } = transcriber({ interim_results: 'false', endpointing: '300' });
    t.audio(bytes(tone(600), silence(400)));
    const [final] = finals(messages);
    expect(text(final!)).toBe('hello there sam');
    expect(final!.channel.alternatives[0]!.words.every((w) => w.punctuated_word === undefined)).toBe(true);
    expect(results(messages).every((m) => m.is_final)).toBe(true);
    expect(messages.some((m) => m.type === 'SpeechStarted')).toBe(false);
  });
});
