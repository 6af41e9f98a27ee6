/**
 * Streaming polyphase resampler for signed 16-bit mono PCM.
 *
 * The ratio is reduced to L/M (up by L, down by M; 8000→16000 is 2/1, 44100→48000 is
 * 160/147) and one Kaiser-windowed sinc low-pass, cut at 90 % of the lower Nyquist
 * frequency, is sampled at the L phases. Each output sample is a dot product of one phase
 * with the input around it, so there is no aliasing from downsampling nor imaging from
 * upsampling (reference/audio-formats.md: naive sample repetition is audible).
 *
 * The filter is centred on each output instant: output sample n sits at input time n·M/L,
 * there is no group delay, and one-shot output has ceil(N·L/M) samples for N inputs.
 * Streaming costs a look-ahead of `HALF_ZERO_CROSSINGS` samples at the lower rate
 * (3 ms at 8 kHz); `flush()` releases it.
 */

/** Zero crossings of the sinc on each side, counted at the lower of the two rates. */
const HALF_ZERO_CROSSINGS = 24;
/** Cut-off as a fraction of the lower Nyquist frequency (passband flat to ~3.3 kHz at 8 kHz). */
const ROLLOFF = 0.9;
/** Kaiser β: about 60 dB of stopband rejection. */
const KAISER_BETA = 6;
/** Largest L accepted; the six standard rates need at most 441 (8000 → 22050). */
const MAX_PHASES = 2048;

interface FilterBank {
  up: number;
  down: number;
  /** Taps per phase (2 × half width in input samples). */
  taps: number;
  /** `up` phases of `taps` coefficients, phase-major; each phase sums to 1 (unity DC gain). */
  coefficients: Float64Array;
}

const banks = new Map<string, FilterBank>();

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Zeroth-order modified Bessel function of the first kind (power series). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

function filterBank(fromHz: number, toHz: number): FilterBank {
  const key = `${fromHz}:${toHz}`;
  const cached = banks.get(key);
  if (cached) return cached;
  const g = gcd(fromHz, toHz);
  const up = toHz / g;
  const down = fromHz / g;
  if (up > MAX_PHASES) {
    throw new RangeError(`Resampler: ${fromHz} → ${toHz} Hz needs ${up} filter phases (max ${MAX_PHASES})`);
  }
  // Work in input-sample units: cut-off in cycles per input sample, half width in input samples.
  const scale = Math.min(1, up / down);
  const cutoff = 0.5 * scale * ROLLOFF;
  const half = Math.ceil(HALF_ZERO_CROSSINGS / scale);
  const taps = 2 * half;
  const i0Beta = besselI0(KAISER_BETA);
  const coefficients = new Float64Array(up * taps);
  for (let p = 0; p < up; p++) {
    const frac = p / up;
    let sum = 0;
    for (let k = 0; k < taps; k++) {
      // Tap k multiplies input (ip - half + 1 + k); the output sits at ip + frac.
      const tau = frac + half - 1 - k;
      const x = tau / half;
      const window = Math.abs(x) >= 1 ? 0 : besselI0(KAISER_BETA * Math.sqrt(1 - x * x)) / i0Beta;
      const arg = 2 * cutoff * tau;
      const sinc = arg === 0 ? 1 : Math.sin(Math.PI * arg) / (Math.PI * arg);
      const h = 2 * cutoff * sinc * window;
      coefficients[p * taps + k] = h;
      sum += h;
    }
    for (let k = 0; k < taps; k++) coefficients[p * taps + k]! /= sum;
  }
  const bank = { up, down, taps, coefficients };
  banks.set(key, bank);
  return bank;
}

/**
 * Converts a stream of PCM16 chunks from one rate to another, keeping filter state across
 * calls so chunk boundaries are seamless: any chunking yields the same samples as one
 * call. Use one instance per stream direction; it is not safe to interleave two streams.
 */
export class Resampler {
  readonly fromHz: number;
  readonly toHz: number;
  readonly #bank: FilterBank | undefined;
  /** Input history as floats; `#buffer[0]` is global input index `#base`. */
  #buffer = new Float64Array(0);
  #length = 0;
  #base = 0;
  /** Global input index of the latest sample at or before the next output instant. */
  #ip = 0;
  /** Next output's position between #ip and #ip + 1, in 1/L steps. */
  #phase = 0;
  #received = 0;

  /**
   * @param fromHz input rate in Hz (positive integer)
   * @param toHz output rate in Hz (positive integer)
   * @throws RangeError for non-integer rates or ratios needing more than 2048 filter phases.
   */
  constructor(fromHz: number, toHz: number) {
    if (!Number.isInteger(fromHz) || !Number.isInteger(toHz) || fromHz <= 0 || toHz <= 0) {
      throw new RangeError(`Resampler: rates must be positive integers (got ${fromHz} → ${toHz})`);
    }
    this.fromHz = fromHz;
    this.toHz = toHz;
    this.#bank = fromHz === toHz ? undefined : filterBank(fromHz, toHz);
    this.#reset();
  }

  /** Resamples one chunk; returns the output ready so far (possibly empty). Input is not modified. */
  process(pcm: Int16Array): Int16Array {
    if (!this.#bank) return pcm.slice();
    this.#append(pcm);
    this.#received += pcm.length;
    return this.#produce(false);
  }

  /**
   * Ends the stream: pads the look-ahead with silence, returns the remaining output and
   * resets the instance so it can start a new stream.
   */
  flush(): Int16Array {
    if (!this.#bank) return new Int16Array(0);
    this.#append(new Int16Array(this.#bank.taps));
    const out = this.#produce(true);
    this.#reset();
    return out;
  }

  #reset(): void {
    const half = this.#bank ? this.#bank.taps / 2 : 0;
    // Samples before the stream are silence: start with `half` zeros of history.
    this.#buffer = new Float64Array(Math.max(1024, half * 4));
    this.#length = half;
    this.#base = -half;
    this.#ip = 0;
    this.#phase = 0;
    this.#received = 0;
  }

  #append(pcm: Int16Array): void {
    if (this.#length + pcm.length > this.#buffer.length) {
      const grown = new Float64Array(Math.max(this.#buffer.length * 2, this.#length + pcm.length));
      grown.set(this.#buffer.subarray(0, this.#length));
      this.#buffer = grown;
    }
    const buf = this.#buffer;
    let at = this.#length;
    for (let i = 0; i < pcm.length; i++) buf[at++] = pcm[i]!;
    this.#length = at;
  }

  #produce(final: boolean): Int16Array {
    const { up, down, taps, coefficients } = this.#bank!;
    const half = taps / 2;
    const buf = this.#buffer;
    const lastIndex = this.#base + this.#length - 1;
    const intStep = Math.floor(down / up);
    const fracStep = down % up;
    let ip = this.#ip;
    let phase = this.#phase;
    // Outputs whose look-ahead is in the buffer; when final, stop at the end of real input
    // (output instant n·M/L must be before sample N).
    const estimate = Math.max(0, Math.ceil(((lastIndex - half + 1 - ip) * up - phase) / down));
    const out = new Int16Array(estimate);
    let count = 0;
    while (ip + half <= lastIndex && (!final || ip < this.#received)) {
      const start = ip - half + 1 - this.#base;
      const c0 = phase * taps;
      let acc = 0;
      for (let k = 0; k < taps; k++) acc += buf[start + k]! * coefficients[c0 + k]!;
      const s = Math.round(acc);
      out[count++] = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
      ip += intStep;
      phase += fracStep;
      if (phase >= up) {
        phase -= up;
        ip += 1;
      }
    }
    this.#ip = ip;
    this.#phase = phase;
    // Drop history the next output no longer needs.
    const keepFrom = ip - half + 1 - this.#base;
    if (keepFrom > 0) {
      const drop = Math.min(keepFrom, this.#length);
      buf.copyWithin(0, drop, this.#length);
      this.#length -= drop;
      this.#base += drop;
    }
    return count === out.length ? out : out.slice(0, count);
  }
}

/** One-shot conversion of a whole clip (equal rates return a copy). */
export function resample(pcm: Int16Array, fromHz: number, toHz: number): Int16Array {
  const r = new Resampler(fromHz, toHz);
  const head = r.process(pcm);
  const tail = r.flush();
  if (tail.length === 0) return head;
  const out = new Int16Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}
