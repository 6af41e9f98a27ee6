import { describe, expect, it } from 'vitest';
import { CallRecorder, RECORDING_CHUNK_SAMPLES } from '../../src/recording/call-recorder.js';
import type { RecordingTracks } from '../../src/recording/encode-recording.js';

const SILENCE = 0xff;
const ORIGIN = 1000;

/** A 20 ms frame whose every byte is `code` (a distinct code per frame makes placement visible). */
const frame = (code: number, ms = 20) => new Uint8Array(ms * 8).fill(code);

/** One track as a flat byte array of the recording's length (unwritten chunks are silence). */
function flat(tracks: RecordingTracks, which: 'caller' | 'agent'): Uint8Array {
  const out = new Uint8Array(tracks.lengthSamples).fill(SILENCE);
  tracks[which].forEach((chunk, c) => chunk && out.set(chunk.subarray(0, Math.max(0, Math.min(chunk.length, tracks.lengthSamples - c * tracks.chunkSamples))), c * tracks.chunkSamples));
  return out;
}

/** The byte codes of a track, one per 20 ms (160 samples). */
function codesPer20Ms(track: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < track.length; i += 160) out.push(track[i]!);
  return out;
}

const S = SILENCE;

describe('CallRecorder timeline', () => {
  it('lays caller frames end to end despite jitter, and places early audio from t=0', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    rec.callerAudio(frame(1), ORIGIN - 30); // arrived before the session started
    rec.callerAudio(frame(2), ORIGIN + 15);
    rec.callerAudio(frame(3), ORIGIN + 70); // 30 ms late: jitter, not a gap
    rec.callerAudio(frame(4), ORIGIN + 71);
    const tracks = rec.finish(120);
    expect(codesPer20Ms(flat(tracks, 'caller'))).toEqual([1, 2, 3, 4, S, S]);
  });

  it('jumps ahead and leaves silence when caller audio lags the clock by more than 60 ms (lost frames)', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    rec.callerAudio(frame(1), ORIGIN + 20);
    rec.callerAudio(frame(2), ORIGIN + 40);
    // Nothing for 160 ms: the next frame arrives at 200 ms and covers 180–200 ms.
    rec.callerAudio(frame(3), ORIGIN + 200);
    rec.callerAudio(frame(4), ORIGIN + 220);
    const tracks = rec.finish(260);
    expect(codesPer20Ms(flat(tracks, 'caller'))).toEqual([1, 2, S, S, S, S, S, S, S, 3, 4, S, S]);
  });

  it('plays agent frames from max(previous frame end, send time): a burst is laid end to end, a pause stays silent', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    // The pacer's initial burst: three frames at once, then one per 20 ms.
    for (const code of [1, 2, 3]) rec.agentAudioSent(frame(code), ORIGIN + 40);
    rec.agentAudioSent(frame(4), ORIGIN + 60);
    rec.agentAudioSent(frame(5), ORIGIN + 80);
    // Next utterance after a pause.
    rec.agentAudioSent(frame(6), ORIGIN + 200);
    const tracks = rec.finish(240);
    expect(codesPer20Ms(flat(tracks, 'agent'))).toEqual([S, S, 1, 2, 3, 4, 5, S, S, S, 6, S]);
    expect(codesPer20Ms(flat(tracks, 'caller')).every((c) => c === S)).toBe(true);
  });

  it('erases agent audio scheduled after a clear (never played) and resumes playback from the clear', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    for (const code of [1, 2, 3]) rec.agentAudioSent(frame(code), ORIGIN); // plays 0–60 ms
    rec.agentAudioSent(frame(4), ORIGIN + 20); // queued behind: 60–80 ms
    rec.agentCleared(ORIGIN + 30); // barge-in: the carrier drops everything after 30 ms
    rec.agentAudioSent(frame(7), ORIGIN + 100); // the next answer
    const tracks = rec.finish(140);
    const agent = flat(tracks, 'agent');
    expect([...agent.subarray(0, 240)].every((b) => b === 1 || b === 2)).toBe(true);
    expect(agent[239]).toBe(2); // frame 2 played until the clear at 30 ms…
    expect([...agent.subarray(240, 800)].every((b) => b === S)).toBe(true); // …and nothing after it until the next answer
    expect(codesPer20Ms(agent).slice(5)).toEqual([7, S]);
  });

  it('resumes right at the clear time when audio is sent just after a clear', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    for (const code of [1, 2, 3, 4, 5]) rec.agentAudioSent(frame(code), ORIGIN);
    rec.agentCleared(ORIGIN + 40);
    rec.agentAudioSent(frame(9), ORIGIN + 40);
    const tracks = rec.finish(100);
    expect(codesPer20Ms(flat(tracks, 'agent'))).toEqual([1, 2, 9, S, S]);
  });

  it('ignores a clear when nothing is scheduled after it', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    rec.agentAudioSent(frame(1), ORIGIN);
    rec.agentCleared(ORIGIN + 100);
    rec.agentAudioSent(frame(2), ORIGIN + 100);
    expect(codesPer20Ms(flat(rec.finish(140), 'agent'))).toEqual([1, S, S, S, S, 2, S]);
  });

  it('spans chunk boundaries, keeps unwritten seconds unallocated, and ends at the call duration', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 10_000 });
    rec.agentAudioSent(frame(5), ORIGIN + 990); // 990–1010 ms: across the first second's end
    rec.callerAudio(frame(6), ORIGIN + 3500); // jumps: 3480–3500 ms
    const tracks = rec.finish(3_600);
    expect(tracks.lengthSamples).toBe(3_600 * 8);
    expect(tracks.chunkSamples).toBe(RECORDING_CHUNK_SAMPLES);
    expect(tracks.agent.map((c) => c !== null)).toEqual([true, true, false, false]);
    expect(tracks.caller.map((c) => c !== null)).toEqual([false, false, false, true]);
    const agent = flat(tracks, 'agent');
    expect([...agent.subarray(990 * 8, 1010 * 8)].every((b) => b === 5)).toBe(true);
    expect(agent[990 * 8 - 1]).toBe(S);
    expect(agent[1010 * 8]).toBe(S);
  });

  it('holds no more than the maximum duration, and ignores audio after finish', () => {
    const rec = new CallRecorder({ originMs: ORIGIN, maxDurationMs: 1_000 });
    rec.agentAudioSent(frame(1), ORIGIN + 990); // half beyond the bound
    rec.agentAudioSent(frame(2), ORIGIN + 5_000); // wholly beyond
    const tracks = rec.finish(60_000);
    expect(tracks.lengthSamples).toBe(8_000);
    expect(tracks.agent).toHaveLength(1);
    expect([...flat(tracks, 'agent').subarray(7920)].every((b) => b === 1)).toBe(true);
    rec.callerAudio(frame(3), ORIGIN);
    expect(tracks.caller).toEqual([null]);
  });
});
