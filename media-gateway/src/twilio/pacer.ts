/**
 * Outbound pacing: agent audio leaves the gateway at real time, one 20 ms μ-law frame per
 * slot per leg, so that a barge-in `clear` has little audio queued at the carrier to
 * discard (reference/audio-formats.md "Paced sending"). One timer serves every leg of the
 * gateway: per-call timers cost a wake-up per call every 20 ms and drift apart.
 */

/** Bytes in one 20 ms frame of μ-law 8 kHz mono. */
export const FRAME_BYTES = 160;
/** μ-law code for silence (reference/audio-formats.md §G.711). */
export const MULAW_SILENCE_BYTE = 0xff;
const BYTES_PER_MS = 8;
/** How late a step must be before {@link OutboundPacer.serviceIfDue} runs it instead of its timer. */
const DUE_SLACK_MS = 1;

/** Where a paced stream's output goes (the leg's socket). Called from the pacer's timer, or from {@link OutboundPacer.serviceIfDue} within another leg's message handler. */
export interface PacerSink {
  /**
   * One frame: the {@link FRAME_BYTES} bytes of `bytes` from `offset`. `bytes` is the queued
   * chunk itself (or a padded frame), passed with an offset so that no view is made per frame
   * (50 a second per call, #5): read the frame during the call, do not keep or change it.
   */
  sendFrame(bytes: Buffer, offset: number): void;
  /** A mark whose preceding audio has all been handed to `sendFrame`. */
  sendMark(name: string): void;
}

/** Timing of one leg's outbound audio, for the load test (#4). */
export interface PacedStreamStats {
  framesSent: number;
  /** Frames sent more than `lateGapMs` (40 ms) after the previous one while audio was waiting. */
  lateFrames: number;
  /** Largest such gap, ms. */
  maxGapMs: number;
  /** Frames whose tail was filled with μ-law silence. */
  paddedFrames: number;
  marksSent: number;
}

/** Timing of the shared timer. */
export interface PacerStats {
  ticks: number;
  /** Ticks that fired a whole frame (20 ms) or more after their slot. */
  lateTicks: number;
  maxTickLatenessMs: number;
  streams: number;
}

export interface OutboundPacerOptions {
  /** Slot length, ms. Default 20 (one frame). */
  frameMs?: number;
  /**
   * Frames a stream may have in flight ahead of real time (default 3 = 60 ms). The first
   * frames of an utterance go out at once up to this lead: it is the carrier's jitter
   * buffer, so a tick that fires late (GC, a busy event loop) does not starve playback.
   * Larger values make `clear` and mark echoes lag behind what we sent.
   */
  initialBurstFrames?: number;
  /** Frames one stream may send in one tick (catch-up after a late tick). Default 3. */
  maxCatchUpFrames?: number;
  /** A gap between two frames above this counts as late (ms). Default 40. */
  lateGapMs?: number;
  /** How long a partial frame at the end of the queue waits for more audio before it is padded (ms). Default 20. */
  partialHoldMs?: number;
  /**
   * Phases of the frame period (default 1). Each stream is placed in one phase (the one with
   * the fewest streams) and is served on that phase's own 20 ms grid, offset by
   * `frameMs / phases` from the next: a gateway's streams then send in `phases` smaller
   * groups spread over the period instead of all in one tick, as independent carrier calls
   * would, so one tick's writes take less time and the later streams of a tick wait less.
   */
  phases?: number;
  /** Monotonic clock, ms. Default `performance.now()`. */
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  /** A sink threw (the socket was gone); the pacer carries on with the other streams. */
  onSinkError?: (err: unknown) => void;
  /**
   * A frame went out `gapMs` after the stream's previous one while audio was waiting (the
   * gap {@link PacedStreamStats.lateFrames} judges). Called per such frame from the
   * timer: keep it allocation-free (the gateway's metrics count it in fixed buckets).
   */
  onFrameGap?: (gapMs: number) => void;
}

type QueueItem = { kind: 'audio'; bytes: Buffer } | { kind: 'mark'; name: string };

/** `bytes` as a Buffer over the same memory (no copy): the sink base64-encodes ranges of it. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Items a stream remembers having sent, newest last: enough to rewind a pause. The carrier
 * holds at most the burst (3 frames) ahead of real time, plus marks whose echo is on its way;
 * 32 items cover ~0.5 s of audio with its marks.
 */
const HISTORY = 32;
const SENT_AUDIO = 0;
const SENT_MARK = 1;

/**
 * The gateway's one pacing timer. Legs {@link register} a sink and queue audio and marks
 * on the returned {@link PacedStream}. The timer only runs while some stream has work, and
 * is scheduled against a monotonic clock (slot n fires at origin + n × 20 ms) so it does
 * not drift the way a chain of `setTimeout(20)` does (each fires ~1 ms late: 5 % slow).
 */
export class OutboundPacer {
  readonly frameMs: number;
  readonly burstFrames: number;
  readonly maxCatchUpFrames: number;
  readonly lateGapMs: number;
  readonly partialHoldMs: number;
  readonly now: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (handle: unknown) => void;
  private readonly onSinkError: (err: unknown) => void;
  /** @internal Read by {@link PacedStream}. */
  readonly onFrameGap: ((gapMs: number) => void) | undefined;
  /** The streams of each phase. */
  private readonly phaseStreams: Set<PacedStream>[];
  /** Length of one phase, ms: the timer's step. */
  private readonly stepMs: number;
  private timer: unknown;
  private stopped = false;
  private originMs = 0;
  /** The next step due: step n of phase n mod phases fires at origin + n × stepMs. */
  private slot = 0;
  private readonly timing = { ticks: 0, lateTicks: 0, maxTickLatenessMs: 0 };

  constructor(opts: OutboundPacerOptions = {}) {
    this.frameMs = opts.frameMs ?? 20;
    this.burstFrames = opts.initialBurstFrames ?? 3;
    this.maxCatchUpFrames = opts.maxCatchUpFrames ?? 3;
    this.lateGapMs = opts.lateGapMs ?? 40;
    this.partialHoldMs = opts.partialHoldMs ?? this.frameMs;
    this.now = opts.now ?? (() => performance.now());
    this.setTimer =
      opts.setTimer ??
      ((fn, ms) => {
        const t = setTimeout(fn, ms);
        t.unref();
        return t;
      });
    this.clearTimer = opts.clearTimer ?? ((h) => clearTimeout(h as NodeJS.Timeout));
    this.onSinkError = opts.onSinkError ?? (() => {});
    this.onFrameGap = opts.onFrameGap;
    const phases = opts.phases ?? 1;
    if (!Number.isInteger(phases) || phases < 1) throw new RangeError(`phases must be a positive integer (got ${phases})`);
    this.phaseStreams = Array.from({ length: phases }, () => new Set<PacedStream>());
    this.stepMs = this.frameMs / phases;
  }

  /** A new paced stream writing to `sink`; {@link PacedStream.close} it when the leg ends. */
  register(sink: PacerSink): PacedStream {
    let phase = 0;
    for (let i = 1; i < this.phaseStreams.length; i++) if (this.phaseStreams[i]!.size < this.phaseStreams[phase]!.size) phase = i;
    const stream = new PacedStream(this, sink, phase);
    this.phaseStreams[phase]!.add(stream);
    return stream;
  }

  get stats(): PacerStats {
    let streams = 0;
    for (const group of this.phaseStreams) streams += group.size;
    return { ...this.timing, streams };
  }

  /** Streams in each phase (tests). */
  get phaseSizes(): number[] {
    return this.phaseStreams.map((group) => group.size);
  }

  /** Stop the timer and forget every stream (gateway shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
    for (const group of this.phaseStreams) group.clear();
  }

  /** @internal */
  unregister(stream: PacedStream): void {
    this.phaseStreams[stream.phase]!.delete(stream);
  }

  /**
   * @internal A stream of `phase` has work: start the timer if it was idle (that phase's step
   * right away), or bring it forward to that phase's next step if it was set for a later one
   * (another phase's: the timer wakes only for phases with work).
   */
  wake(phase: number): void {
    if (this.stopped) return;
    const now = this.now();
    if (this.timer === undefined) {
      this.slot = phase;
      this.originMs = now - phase * this.stepMs;
      this.timer = this.setTimer(() => this.tick(), 0);
      return;
    }
    const n = this.phaseStreams.length;
    const next = Math.floor((now - this.originMs) / this.stepMs) + 1;
    const step = next + ((((phase - next) % n) + n) % n);
    if (step >= this.slot) return;
    this.clearTimer(this.timer);
    this.slot = step;
    this.timer = this.setTimer(() => this.tick(), Math.max(0, this.originMs + step * this.stepMs - now));
  }

  /**
   * Runs the step the timer is waiting for when it is already due. The gateway calls it
   * after each message a carrier socket delivers: a timer fires only once the event loop
   * has worked through every socket that was ready when it polled, and at 200 calls that
   * can be a few ms of reads, so a due step served from between two of them goes out sooner.
   */
  serviceIfDue(): void {
    if (this.timer === undefined) return;
    const now = this.now();
    if (now < this.originMs + this.slot * this.stepMs + DUE_SLACK_MS) return;
    this.clearTimer(this.timer);
    this.tick();
  }

  /** @internal */
  reportSinkError(err: unknown): void {
    this.onSinkError(err);
  }

  private tick(): void {
    this.timer = undefined;
    const now = this.now();
    const lateness = now - (this.originMs + this.slot * this.stepMs);
    this.timing.ticks++;
    if (lateness >= this.frameMs) this.timing.lateTicks++;
    if (lateness > this.timing.maxTickLatenessMs) this.timing.maxTickLatenessMs = lateness;
    // The steps due by now, each phase at most once (a late tick serves the phases it missed
    // at once rather than a period later: their streams' lead model decides the catch-up).
    const current = Math.max(this.slot, Math.floor((now - this.originMs) / this.stepMs));
    // Room is judged at the step's time on the grid, not at the instant the timer fired:
    // Node fires a timer up to ~1 ms early (its loop clock is cached, in whole ms) or a few
    // ms late, and a stream whose lead sits at the threshold would skip a slot on an early
    // tick and send two on the next (a 40 ms gap, then none), or the other way round on a
    // late one (#5). A tick later than half a frame is a stall: judged at `now`, to catch up.
    const stalled = Math.abs(lateness) >= this.frameMs / 2;
    for (let step = Math.max(this.slot, current - this.phaseStreams.length + 1); step <= current; step++) {
      const slotAt = stalled ? now : this.originMs + step * this.stepMs;
      for (const stream of this.phaseStreams[step % this.phaseStreams.length]!) stream.service(now, slotAt);
    }
    // The next step whose phase has work; none: idle, no wake-ups until a stream queues something.
    for (let step = current + 1; step <= current + this.phaseStreams.length; step++) {
      if (!this.phaseHasWork(step % this.phaseStreams.length)) continue;
      this.slot = step;
      this.timer = this.setTimer(() => this.tick(), Math.max(0, this.originMs + step * this.stepMs - now));
      return;
    }
  }

  private phaseHasWork(phase: number): boolean {
    for (const stream of this.phaseStreams[phase]!) if (stream.hasWork) return true;
    return false;
  }
}

/**
 * One leg's outbound queue: audio and marks in order. Sending follows a model of the
 * carrier's playback buffer: `playoutEndsAt` estimates when the far end finishes the
 * audio sent so far, and a frame goes out while that lead is below the burst (3 frames).
 * This single rule gives the initial burst, one frame per slot in steady state, bounded
 * catch-up after a late tick (at most `maxCatchUpFrames`, and never beyond the burst: if
 * the loop stalled longer than the lead, the far end stalled too and that debt is not
 * repaid), and no burst ratchet after short underruns.
 */
export class PacedStream {
  readonly stats: PacedStreamStats = { framesSent: 0, lateFrames: 0, maxGapMs: 0, paddedFrames: 0, marksSent: 0 };
  private items: QueueItem[] = [];
  private head = 0;
  private headOffset = 0;
  private queuedBytes = 0;
  private playoutEndsAt = Number.NEGATIVE_INFINITY;
  private partialSince: number | undefined;
  private lastSendAt: number | undefined;
  private backlogged = false;
  private closed = false;
  private paused = false;
  /**
   * Ring of what was sent: kind, the frame (its chunk and offset, as sent) or mark name, and
   * the time the far end starts playing the frame (a mark: finishes the audio before it), by
   * the same model as {@link playoutEndsAt}. Fixed arrays: nothing is allocated per frame, so
   * the ~0.6 s the ring holds a frame does not make garbage that outlives a young-generation
   * collection (each promoted object lengthens the GC pauses that delay every call's frames).
   */
  private readonly sentKind = new Uint8Array(HISTORY);
  private readonly sentFrame: (Buffer | null)[] = new Array<Buffer | null>(HISTORY).fill(null);
  private readonly sentOffset = new Int32Array(HISTORY);
  private readonly sentName: (string | null)[] = new Array<string | null>(HISTORY).fill(null);
  private readonly sentAt = new Float64Array(HISTORY);
  private sentStart = 0;
  private sentCount = 0;
  /** The frame {@link nextFrame} found: its chunk (null: none) and offset. */
  private frameBytes: Buffer | null = null;
  private frameOffset = 0;

  constructor(
    private readonly pacer: OutboundPacer,
    private readonly sink: PacerSink,
    /** @internal The pacer's phase this stream is served in. */
    readonly phase: number,
  ) {}

  /** Milliseconds of audio queued and not yet sent. */
  get queuedMs(): number {
    return this.queuedBytes / BYTES_PER_MS;
  }

  /** @internal */
  get hasWork(): boolean {
    return !this.paused && this.head < this.items.length;
  }

  /** True between {@link pause} or {@link hold} and {@link resume} (or {@link clear}). */
  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Queue μ-law audio of any length; it is cut into 20 ms frames as it is sent. The memory
   * is kept, not copied: do not change it afterwards. When the far end is about to run dry
   * (start of an utterance, an underrun), frames go out at once rather than at the next
   * tick: that tick could be up to 20 ms away. Otherwise the tick sends them: a frame sent between two slots (the next
   * sentence arriving mid-utterance) would make the next slot send none (gaps of x, 40 − x).
   */
  enqueueAudio(mulaw: Uint8Array): void {
    if (this.closed || mulaw.byteLength === 0) return;
    this.items.push({ kind: 'audio', bytes: asBuffer(mulaw) });
    this.queuedBytes += mulaw.byteLength;
    if (this.paused) return;
    const now = this.pacer.now();
    if (this.playoutEndsAt - now < this.pacer.frameMs) this.service(now);
    if (this.hasWork) this.pacer.wake(this.phase);
  }

  /** Queue a mark; it is sent right after the last frame of the audio queued before it (now, if none). */
  enqueueMark(name: string): void {
    if (this.closed) return;
    this.items.push({ kind: 'mark', name });
    if (this.paused) return;
    if (this.queuedBytes === 0) this.flushMarks();
    else this.pacer.wake(this.phase);
  }

  /**
   * Barge-in: drop queued audio and the marks not yet sent (their names are returned; they
   * never reached the carrier). The carrier's buffer is emptied by its own `clear`, so
   * the next audio starts with a fresh burst.
   */
  clear(): string[] {
    const dropped: string[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (item.kind === 'mark') dropped.push(item.name);
    }
    this.items = [];
    this.head = 0;
    this.headOffset = 0;
    this.queuedBytes = 0;
    this.partialSince = undefined;
    this.backlogged = false;
    this.playoutEndsAt = Number.NEGATIVE_INFINITY;
    this.paused = false;
    this.forgetSent();
    return dropped;
  }

  /**
   * Tentative barge-in (the leg sends the carrier `clear` right after): stop sending, and put
   * back at the head of the queue what the far end has not started playing by the playout
   * model, i.e. the frames sent ahead that its `clear` discards, rewound to the first frame
   * not yet started (the one playing now counts as played: its tail, under 20 ms, is lost),
   * and the marks among them, plus earlier marks `pending` says the carrier has not echoed
   * (a `clear` returns them unplayed). Audio and marks queued later wait behind; nothing goes
   * out until {@link resume}.
   */
  pause(pending: (mark: string) => boolean): void {
    if (this.closed || this.paused) return;
    const now = this.pacer.now();
    const held: QueueItem[] = [];
    let rewinding = false;
    for (let k = 0; k < this.sentCount; k++) {
      const i = (this.sentStart + k) % HISTORY;
      if (this.sentKind[i] === SENT_MARK) {
        if (pending(this.sentName[i]!)) held.push({ kind: 'mark', name: this.sentName[i]! });
        continue;
      }
      if (!rewinding && this.sentAt[i]! >= now) rewinding = true;
      if (rewinding) {
        const offset = this.sentOffset[i]!;
        held.push({ kind: 'audio', bytes: this.sentFrame[i]!.subarray(offset, offset + FRAME_BYTES) });
        this.queuedBytes += FRAME_BYTES;
      }
    }
    const rest = this.items.slice(this.head);
    const first = rest[0];
    if (first?.kind === 'audio' && this.headOffset > 0) rest[0] = { kind: 'audio', bytes: first.bytes.subarray(this.headOffset) };
    this.items = held.length > 0 ? held.concat(rest) : rest;
    this.head = 0;
    this.headOffset = 0;
    this.partialSince = undefined;
    this.backlogged = false;
    this.lastSendAt = undefined; // the pause is not a late frame
    this.playoutEndsAt = Number.NEGATIVE_INFINITY;
    this.paused = true;
    this.forgetSent();
  }

  /**
   * Pause for a carrier that keeps what it was sent (Vonage has no `clear`): stop sending and
   * recall nothing. The far end plays out its lead (at most the burst) meanwhile, and the
   * playout model keeps counting it down, so {@link resume} tops the lead back up (a fresh
   * burst once it has played out) instead of sending on without one. A rewind here would
   * offer again frames the carrier still had, and the model would take those for a cushion
   * the far end no longer holds: one late tick after such a resume was an audible gap.
   */
  hold(): void {
    if (this.closed || this.paused) return;
    this.partialSince = undefined;
    this.backlogged = false;
    this.lastSendAt = undefined; // the pause is not a late frame
    this.paused = true;
  }

  /**
   * Send on from where {@link pause} or {@link hold} stopped, up to the burst's lead over
   * what the far end still holds: after a pause (its buffer cleared) or a long hold, a fresh burst.
   */
  resume(): void {
    if (this.closed || !this.paused) return;
    this.paused = false;
    this.service(this.pacer.now());
    if (this.hasWork) this.pacer.wake(this.phase);
  }

  /** Stop sending and leave the pacer. */
  close(): void {
    this.closed = true;
    this.clear();
    this.pacer.unregister(this);
  }

  /**
   * @internal Send what is due. `now` is the real time (gaps are measured with it);
   * `slotAt` the time room is judged at: the pacer's tick passes its slot's time on the grid.
   */
  service(now: number, slotAt = now): void {
    if (this.closed || this.paused) return;
    this.flushMarks();
    let sent = 0;
    while (sent < this.pacer.maxCatchUpFrames && this.hasRoom(slotAt)) {
      if (!this.nextFrame(now)) break;
      const bytes = this.frameBytes!;
      const offset = this.frameOffset;
      this.frameBytes = null;
      if (sent === 0 && this.backlogged && this.lastSendAt !== undefined) {
        const gap = now - this.lastSendAt;
        if (gap > this.stats.maxGapMs) this.stats.maxGapMs = gap;
        if (gap > this.pacer.lateGapMs) this.stats.lateFrames++;
        this.pacer.onFrameGap?.(gap);
      }
      try {
        this.sink.sendFrame(bytes, offset);
      } catch (err) {
        this.pacer.reportSinkError(err);
      }
      // An underrun restarts the far end's playback now, whatever the slot's time.
      this.remember(SENT_AUDIO, bytes, offset, null, Math.max(now, this.playoutEndsAt));
      this.playoutEndsAt = Math.max(now, this.playoutEndsAt) + this.pacer.frameMs;
      this.lastSendAt = now;
      this.stats.framesSent++;
      sent++;
      this.flushMarks();
    }
    // Audio was waiting for the next slot: a long gap before the next frame is our lateness.
    this.backlogged = this.queuedBytes >= FRAME_BYTES;
  }

  /** The far end holds less than the burst; the half frame absorbs timer jitter. */
  private hasRoom(now: number): boolean {
    const maxLeadMs = this.pacer.burstFrames * this.pacer.frameMs - this.pacer.frameMs / 2;
    return this.playoutEndsAt - now <= maxLeadMs;
  }

  private flushMarks(): void {
    while (this.head < this.items.length) {
      const item = this.items[this.head]!;
      if (item.kind !== 'mark') break;
      this.head++;
      this.stats.marksSent++;
      try {
        this.sink.sendMark(item.name);
      } catch (err) {
        this.pacer.reportSinkError(err);
      }
      this.remember(SENT_MARK, null, 0, item.name, this.playoutEndsAt);
    }
    this.compact();
  }

  /**
   * Finds the next 20 ms frame ({@link frameBytes} and {@link frameOffset}); false when there
   * is none to send yet. A partial frame (less than 160 bytes before a mark or
   * the end of the queue) is padded with silence at once when a mark follows (the
   * utterance is over and the mark must not wait), otherwise only after `partialHoldMs`
   * with no new audio: TTS chunks are not frame-aligned and the rest of a frame usually
   * follows within milliseconds, and padding mid-utterance would insert a click of silence.
   */
  private nextFrame(now: number): boolean {
    if (this.queuedBytes === 0) return false;
    const first = this.items[this.head];
    if (!first || first.kind !== 'audio') return false;
    if (first.bytes.byteLength - this.headOffset >= FRAME_BYTES) {
      // Fast path: the frame is in the queued chunk; nothing is copied or allocated.
      this.frameBytes = first.bytes;
      this.frameOffset = this.headOffset;
      this.consume(FRAME_BYTES, null);
      this.partialSince = undefined;
      return true;
    }
    let available = 0;
    let markNext = false;
    for (let i = this.head; i < this.items.length && available < FRAME_BYTES; i++) {
      const item = this.items[i]!;
      if (item.kind === 'mark') {
        markNext = true;
        break;
      }
      available += item.bytes.byteLength - (i === this.head ? this.headOffset : 0);
    }
    if (available < FRAME_BYTES && !markNext) {
      if (this.partialSince === undefined) this.partialSince = now;
      if (now - this.partialSince < this.pacer.partialHoldMs) return false;
    }
    this.partialSince = undefined;
    const frame = Buffer.alloc(FRAME_BYTES, MULAW_SILENCE_BYTE);
    this.consume(Math.min(available, FRAME_BYTES), frame);
    if (available < FRAME_BYTES) this.stats.paddedFrames++;
    this.frameBytes = frame;
    this.frameOffset = 0;
    return true;
  }

  /** Remove `n` audio bytes from the head, copying them into `into` when given. */
  private consume(n: number, into: Uint8Array | null): void {
    let copied = 0;
    while (copied < n) {
      const item = this.items[this.head] as { kind: 'audio'; bytes: Buffer };
      const take = Math.min(n - copied, item.bytes.byteLength - this.headOffset);
      if (into) into.set(item.bytes.subarray(this.headOffset, this.headOffset + take), copied);
      copied += take;
      this.headOffset += take;
      if (this.headOffset === item.bytes.byteLength) {
        this.head++;
        this.headOffset = 0;
      }
    }
    this.queuedBytes -= n;
    this.compact();
  }

  private remember(kind: number, frame: Buffer | null, offset: number, name: string | null, at: number): void {
    let i: number;
    if (this.sentCount < HISTORY) i = (this.sentStart + this.sentCount++) % HISTORY;
    else {
      i = this.sentStart;
      this.sentStart = (this.sentStart + 1) % HISTORY;
    }
    this.sentKind[i] = kind;
    this.sentFrame[i] = frame;
    this.sentOffset[i] = offset;
    this.sentName[i] = name;
    this.sentAt[i] = at;
  }

  private forgetSent(): void {
    this.sentFrame.fill(null);
    this.sentName.fill(null);
    this.sentStart = 0;
    this.sentCount = 0;
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 256 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
