/**
 * The processor harness of STYLE.md §9: wraps one processor (or a short chain) in a real
 * {@link Pipeline}, feeds frames in at the top (`down`) or the bottom (`up`), and records
 * every frame that leaves either end, in order, so a test asserts on what came out in
 * each direction — including after an `interrupt`.
 */
import { mulawEncode } from '../../src/audio/g711.js';
import type { Frame, FrameKind, FrameOf, SayPurpose, SpokenWord, UserTurn } from '../../src/frames.js';
import { Pipeline } from '../../src/pipeline/pipeline.js';
import type { Direction, Processor } from '../../src/pipeline/processor.js';
import type { FrameVad } from '../../src/processors/turn-detector.js';
import type { SttWord, TtsAlignment } from '../../src/providers/types.js';

export class Harness {
  readonly pipeline: Pipeline;
  /** Frames that left the bottom (`down`) and the top (`up`), in order. */
  readonly out: Record<Direction, Frame[]> = { down: [], up: [] };

  constructor(processors: Processor | Processor[]) {
    this.pipeline = new Pipeline(Array.isArray(processors) ? processors : [processors], {
      onDown: (f) => this.out.down.push(f),
      onUp: (f) => this.out.up.push(f),
    });
  }

  /** Feeds frames in at the top, travelling down. */
  down(...frames: Frame[]): this {
    for (const f of frames) this.pipeline.send(f, 'down');
    return this;
  }

  /** Feeds frames in at the bottom, travelling up. */
  up(...frames: Frame[]): this {
    for (const f of frames) this.pipeline.send(f, 'up');
    return this;
  }

  /** Frames of one kind that left in direction `dir`, typed. */
  of<K extends FrameKind>(dir: Direction, kind: K): FrameOf<K>[] {
    return this.out[dir].filter((f): f is FrameOf<K> => f.kind === kind);
  }

  downOf<K extends FrameKind>(kind: K): FrameOf<K>[] {
    return this.of('down', kind);
  }

  upOf<K extends FrameKind>(kind: K): FrameOf<K>[] {
    return this.of('up', kind);
  }

  /** Kinds that left in direction `dir`, in order, optionally without some noisy kinds. */
  kinds(dir: Direction, ignore: FrameKind[] = []): FrameKind[] {
    return this.out[dir].map((f) => f.kind).filter((k) => !ignore.includes(k));
  }

  /** Forgets what came out so far (to assert only on what follows). */
  reset(): this {
    this.out.down.length = 0;
    this.out.up.length = 0;
    return this;
  }

  close(): Promise<void> {
    return this.pipeline.close();
  }
}

/**
 * Lets promise chains (async generators, `for await`) run to quiescence. Works with both
 * real and fake timers because it only uses microtasks.
 */
export async function settle(ticks = 50): Promise<void> {
  for (let i = 0; i < ticks; i++) await Promise.resolve();
}

// ---------- frames ----------

const VOICED_PCM = new Int16Array(160).fill(8000);
const SILENT_PCM = new Int16Array(160);
const VOICED_MULAW = mulawEncode(VOICED_PCM);
const SILENT_MULAW = mulawEncode(SILENT_PCM);

/** 20 ms of caller audio; `voiced` frames are loud, the others digital silence. */
export function callerAudio(voiced: boolean): Uint8Array {
  return (voiced ? VOICED_MULAW : SILENT_MULAW).slice();
}

/** A VAD stub: a frame is speech when it is loud (decided per frame, no smoothing). */
export function levelVad(): FrameVad {
  return { process: (pcm) => ({ isSpeech: pcm.some((s) => Math.abs(s) > 1000) }) };
}

/** A default user turn; override any field. */
export function userTurn(text: string, over: Partial<UserTurn> = {}): UserTurn {
  return { text, source: 'speech', words: [], confidence: 0.9, startAt: 0, endAt: 500, speechEndAt: 500, sttFinalAt: 550, ...over };
}

/** Builders for every frame the tests feed, so a test states only what matters. */
export const frames = {
  audio: (at: number, voiced: boolean): FrameOf<'audio.in'> => ({ kind: 'audio.in', mulaw: voiced ? VOICED_MULAW : SILENT_MULAW, pcm: voiced ? VOICED_PCM : SILENT_PCM, at }),
  interim: (text: string, at: number, over: Partial<FrameOf<'transcript.interim'>> = {}): FrameOf<'transcript.interim'> => ({ kind: 'transcript.interim', text, words: [] as SttWord[], confidence: 0.7, at, ...over }),
  final: (text: string, at: number, over: Partial<FrameOf<'transcript.final'>> = {}): FrameOf<'transcript.final'> => ({
    kind: 'transcript.final',
    text,
    words: [] as SttWord[],
    confidence: 0.95,
    startMs: 0,
    endMs: at,
    speechFinal: false,
    at,
    ...over,
  }),
  utteranceEnd: (at: number): FrameOf<'stt.utterance-end'> => ({ kind: 'stt.utterance-end', at }),
  dtmf: (digit: string, at: number): FrameOf<'dtmf'> => ({ kind: 'dtmf', digit, at }),
  userTurn: (text: string, at: number, over: Partial<UserTurn> = {}): FrameOf<'user.turn'> => ({ kind: 'user.turn', turn: userTurn(text, over), at }),
  say: (text: string, purpose: SayPurpose, at = 0): FrameOf<'agent.say'> => ({ kind: 'agent.say', text, purpose, at }),
  turnStart: (turnId: string, at = 0, source: 'llm' | 'system' = 'llm', purpose: SayPurpose | 'reply' = 'reply'): FrameOf<'agent.turn-start'> => ({ kind: 'agent.turn-start', turnId, source, purpose, at }),
  llmText: (turnId: string, text: string, at = 0): FrameOf<'llm.text'> => ({ kind: 'llm.text', turnId, text, at }),
  llmDone: (turnId: string, at = 0): FrameOf<'llm.done'> => ({ kind: 'llm.done', turnId, at }),
  sentence: (turnId: string, text: string, at = 0): FrameOf<'tts.sentence'> => ({ kind: 'tts.sentence', turnId, text, at }),
  ttsAudio: (turnId: string, mulaw: Uint8Array, alignment: TtsAlignment | null = null, at = 0): FrameOf<'tts.audio'> => ({ kind: 'tts.audio', turnId, mulaw, alignment, at }),
  ttsDone: (turnId: string, at = 0): FrameOf<'tts.done'> => ({ kind: 'tts.done', turnId, at }),
  interrupt: (at: number, cause: FrameOf<'interrupt'>['cause'] = 'barge-in', speechOnsetAt = at): FrameOf<'interrupt'> => ({ kind: 'interrupt', cause, at, speechOnsetAt }),
  audioStarted: (turnId: string, at = 0): FrameOf<'agent.audio-started'> => ({ kind: 'agent.audio-started', turnId, at }),
  spoken: (turnId: string, text: string, over: Partial<FrameOf<'agent.spoken'>> = {}): FrameOf<'agent.spoken'> => ({
    kind: 'agent.spoken',
    turnId,
    text,
    heardText: text,
    interrupted: false,
    playedMs: 1000,
    startedAt: 0,
    words: [] as SpokenWord[],
    purpose: 'reply',
    at: 1000,
    ...over,
  }),
};

/** `ms` of μ-law audio (8 bytes per ms), non-silent. */
export function mulawMs(ms: number): Uint8Array {
  return new Uint8Array(ms * 8).fill(0x2a);
}
