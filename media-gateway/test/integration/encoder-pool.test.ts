import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { mulawEncode } from '@vap/voice-pipeline';
import { CallRecorder } from '../../src/recording/call-recorder.js';
import type { EncodeRequest } from '../../src/recording/encode-recording.js';
import { EncoderPool } from '../../src/recording/encoder-pool.js';
import { decodeMp3, mp3Channels, rms } from '../recording-audio.js';

const logger = pino({ level: 'silent' });

/** A finished recording of `seconds`: the caller speaks (a tone) every other second from 0, the agent in between. */
function recording(seconds: number, format: EncodeRequest['format'] = 'mp3'): EncodeRequest {
  const rec = new CallRecorder({ originMs: 0, maxDurationMs: seconds * 1000 });
  const tone = (hz: number) => {
    const pcm = new Int16Array(160);
    for (let i = 0; i < 160; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 8000));
    return mulawEncode(pcm);
  };
  const silence = new Uint8Array(160).fill(0xff);
  for (let ms = 20; ms <= seconds * 1000; ms += 20) {
    const callerTurn = Math.floor((ms - 20) / 1000) % 2 === 0;
    rec.callerAudio(callerTurn ? tone(400) : silence, ms);
    if (!callerTurn) rec.agentAudioSent(tone(1000), ms - 20);
  }
  return { ...rec.finish(seconds * 1000), format, channels: 2 };
}

let pool: EncoderPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('EncoderPool (worker threads)', () => {
  it('encodes in a worker thread: the event loop keeps its 20 ms beat through a 60-second stereo MP3', async () => {
    pool = new EncoderPool({ size: 1, logger });
    // Warm up (worker start-up and the first module load are not what is measured).
    await pool.encode(recording(1));
    const lags: number[] = [];
    let last = performance.now();
    const beat = setInterval(() => {
      const now = performance.now();
      lags.push(now - last - 20);
      last = now;
    }, 20);
    const startedAt = performance.now();
    const mp3 = await pool.encode(recording(60));
    const tookMs = performance.now() - startedAt;
    clearInterval(beat);
    // Encoding on this thread would block it for the whole encode (one long gap, few beats);
    // in the worker the loop only sees timer jitter. Relative to the encode time, so a busy
    // machine (which slows both) does not fail it.
    expect(lags.length).toBeGreaterThan(tookMs / 40);
    expect(Math.max(...lags)).toBeLessThan(Math.max(100, tookMs / 3));
    const decoded = await decodeMp3(mp3);
    expect(mp3Channels(mp3)).toBe(2);
    expect(decoded.samplesDecoded).toBe(60 * 8000);
    const [left, right] = decoded.channelData as [Float32Array, Float32Array];
    expect(rms(left, 40_100, 40_900)).toBeGreaterThan(0.1); // a caller second
    expect(rms(right, 40_100, 40_900)).toBeLessThan(0.01);
    expect(rms(right, 41_100, 41_900)).toBeGreaterThan(0.1); // an agent second
    expect(rms(left, 41_100, 41_900)).toBeLessThan(0.01);
    console.info(`60-s stereo MP3 encoded in a worker in ${Math.round(tookMs)} ms (${mp3.length} bytes)`);
  }, 60_000);

  it('queues jobs on one worker and answers each with its own file', async () => {
    pool = new EncoderPool({ size: 1, logger });
    const jobs = [recording(2, 'wav'), recording(3, 'wav'), recording(1, 'mp3')];
    const pending = jobs.map((j) => pool!.encode(j));
    expect(pool.pending).toBe(3);
    const [a, b, c] = await Promise.all(pending);
    expect(a!.length).toBe(44 + 2 * 8000 * 4);
    expect(b!.length).toBe(44 + 3 * 8000 * 4);
    expect(String.fromCharCode(...c!.subarray(0, 3))).not.toBe('RIF');
    expect(pool.pending).toBe(0);
  }, 30_000);

  it('finishes queued jobs before closing, then refuses new ones', async () => {
    pool = new EncoderPool({ size: 1, logger });
    const pending = [pool.encode(recording(5)), pool.encode(recording(5, 'wav'))];
    const closed = pool.close();
    const [mp3, wav] = await Promise.all(pending);
    await closed;
    expect((await decodeMp3(mp3!)).samplesDecoded).toBe(5 * 8000);
    expect(wav!.length).toBe(44 + 5 * 8000 * 4);
    await expect(pool.encode(recording(1))).rejects.toThrow(/closed/);
  }, 30_000);

  it('fails the job of a worker that dies, and starts a new worker for the next job', async () => {
    const crashing = new EncoderPool({ size: 1, logger, workerUrl: new URL('../fixtures/crashing-encoder-worker.mjs', import.meta.url) });
    try {
      const first = crashing.encode(recording(1));
      const second = crashing.encode(recording(1));
      await expect(first).rejects.toThrow(/exited with code 3/);
      await expect(second).rejects.toThrow(/exited with code 3/);
      expect(crashing.pending).toBe(0);
    } finally {
      await crashing.close();
    }
  }, 30_000);

  it('fails the job of an encoder that throws, and carries on with the next', async () => {
    pool = new EncoderPool({ size: 1, logger });
    const bad = { ...recording(1), format: 'flac' as unknown as 'mp3' };
    const failed = pool.encode(bad);
    const good = pool.encode(recording(1, 'wav'));
    await expect(failed).rejects.toThrow(/recording encoder/);
    expect((await good).length).toBe(44 + 8000 * 4);
  }, 30_000);
});
