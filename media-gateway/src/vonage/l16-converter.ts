/**
 * Frame-by-frame conversion between the session's audio (G.711 μ-law, 8 kHz) and Vonage's
 * WebSocket audio (linear PCM 16-bit little-endian, 16 kHz; reference/telephony-vonage.md §3
 * and reference/audio-formats.md). Resampling is the voice pipeline's polyphase
 * {@link Resampler}: naive sample repetition or dropping is audible (imaging, aliasing).
 */
import { Resampler, mulawDecode, mulawEncode, pcm16FromBytesLE, pcm16ToBytesLE } from '@vap/voice-pipeline';

/** Bytes of one 20 ms Vonage frame at 16 kHz (320 samples × 2). */
export const L16_FRAME_BYTES = 640;
/** Vonage's WebSocket sample rate we ask for in the NCCO (`audio/l16;rate=16000`). */
export const L16_SAMPLE_RATE_HZ = 16_000;
const SESSION_RATE_HZ = 8000;

/**
 * One direction of a call's audio through a streaming resampler, with the resampler's
 * look-ahead paid once up front: the first chunk's output is padded at its start with the
 * samples the filter still holds back (48 at 16 kHz, 3 ms), so every later chunk of N input
 * samples yields exactly N × ratio: 20 ms in is 20 ms out, frame for frame, and audio is
 * never stuck in the filter waiting for a next frame that may not come.
 */
class FrameResampler {
  private resampler: Resampler;
  private primed = false;

  constructor(
    private readonly fromHz: number,
    private readonly toHz: number,
  ) {
    this.resampler = new Resampler(fromHz, toHz);
  }

  process(pcm: Int16Array): Int16Array {
    const out = this.resampler.process(pcm);
    if (this.primed) return out;
    this.primed = true;
    const expected = Math.round((pcm.length * this.toHz) / this.fromHz);
    if (out.length >= expected) return out;
    const padded = new Int16Array(expected);
    padded.set(out, expected - out.length);
    return padded;
  }

  /** Forget the filter's history (after a clear: the cut audio's tail must not leak into the next utterance). */
  reset(): void {
    this.resampler = new Resampler(this.fromHz, this.toHz);
    this.primed = false;
  }
}

/** Agent audio towards Vonage: a 20 ms μ-law 8 kHz frame (160 bytes) → a 640-byte L16 16 kHz frame. */
export class MulawToL16 {
  private readonly up = new FrameResampler(SESSION_RATE_HZ, L16_SAMPLE_RATE_HZ);

  /** Returns a new array (the pacer's frame is a view that must not be kept). */
  convert(mulaw: Uint8Array): Uint8Array {
    return pcm16ToBytesLE(this.up.process(mulawDecode(mulaw)));
  }

  reset(): void {
    this.up.reset();
  }
}

/** Caller audio from Vonage: L16 16 kHz little-endian bytes (640 per frame) → μ-law 8 kHz (160 per frame). */
export class L16ToMulaw {
  private readonly down = new FrameResampler(L16_SAMPLE_RATE_HZ, SESSION_RATE_HZ);

  /** `l16` must hold an even number of bytes; the result is a new array. */
  convert(l16: Uint8Array): Uint8Array {
    return mulawEncode(this.down.process(pcm16FromBytesLE(l16)));
  }
}
