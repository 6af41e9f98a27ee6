import { newId } from '@vap/shared';
import type { FrameOf, TurnMetrics, UsageDelta, UserTurn } from '../frames.js';

/** A stored message (bus `sessionMessage` shape). */
export interface RecordedMessage {
  id: string;
  seq: number;
  role: 'agent' | 'user';
  content: string;
  timestamp: string;
  durationMs: number;
  interrupted: boolean;
  source: 'speech' | 'dtmf' | 'system' | 'llm';
}

/** A transcript turn; times in seconds from the start of the call. */
export interface RecordedTurn {
  id: string;
  seq: number;
  speaker: 'agent' | 'user';
  text: string;
  startTime: number;
  endTime: number;
  confidence: number;
  words: { word: string; startTime: number; endTime: number; confidence: number }[];
}

export interface Usage {
  llmInputTokens: number;
  llmOutputTokens: number;
  ttsCharacters: number;
  sttAudioMs: number;
}

const s = (ms: number) => Math.max(0, Math.round(ms) / 1000);

/**
 * The faithful record of one call: messages in order, transcript turns with word timings,
 * usage and per-turn latency. Agent messages hold what the caller heard, not what the LLM
 * wrote.
 */
export class CallRecord {
  readonly messages: RecordedMessage[] = [];
  readonly turns: RecordedTurn[] = [];
  readonly metrics: TurnMetrics[] = [];
  readonly usage: Usage = { llmInputTokens: 0, llmOutputTokens: 0, ttsCharacters: 0, sttAudioMs: 0 };
  userTurns = 0;
  interruptions = 0;

  /** @param startedAtMs wall-clock epoch ms of the call's t=0. */
  constructor(private readonly startedAtMs: number) {}

  addUsage(u: UsageDelta): void {
    this.usage.llmInputTokens += u.llmInputTokens ?? 0;
    this.usage.llmOutputTokens += u.llmOutputTokens ?? 0;
    this.usage.ttsCharacters += u.ttsCharacters ?? 0;
    this.usage.sttAudioMs += u.sttAudioMs ?? 0;
  }

  addUser(turn: UserTurn): { message: RecordedMessage; turn: RecordedTurn } {
    this.userTurns += 1;
    const content = turn.source === 'dtmf' ? `[DTMF] ${turn.text}` : turn.text;
    const message = this.message('user', content, turn.startAt, turn.endAt - turn.startAt, false, turn.source);
    const t: RecordedTurn = {
      id: newId('turn'),
      seq: this.turns.length,
      speaker: 'user',
      text: content,
      startTime: s(turn.startAt),
      endTime: s(Math.max(turn.endAt, turn.startAt)),
      confidence: round4(turn.confidence),
      words: turn.words.map((w) => ({ word: w.word, startTime: s(w.startMs), endTime: s(w.endMs), confidence: round4(w.confidence) })),
    };
    this.turns.push(t);
    return { message, turn: t };
  }

  addAgent(spoken: FrameOf<'agent.spoken'>): { message: RecordedMessage; turn: RecordedTurn } | null {
    if (spoken.interrupted) this.interruptions += 1;
    if (!spoken.heardText.trim()) return null;
    const message = this.message('agent', spoken.heardText, spoken.startedAt, spoken.playedMs, spoken.interrupted, spoken.purpose === 'reply' ? 'llm' : 'system');
    const t: RecordedTurn = {
      id: newId('turn'),
      seq: this.turns.length,
      speaker: 'agent',
      text: spoken.heardText,
      startTime: s(spoken.startedAt),
      endTime: s(spoken.startedAt + spoken.playedMs),
      confidence: 1,
      words: spoken.words.map((w) => ({ word: w.word, startTime: s(w.startAt), endTime: s(w.endAt), confidence: 1 })),
    };
    this.turns.push(t);
    return { message, turn: t };
  }

  private message(role: 'agent' | 'user', content: string, atMs: number, durationMs: number, interrupted: boolean, source: RecordedMessage['source']): RecordedMessage {
    const m: RecordedMessage = {
      id: newId('msg'),
      seq: this.messages.length,
      role,
      content,
      timestamp: new Date(this.startedAtMs + atMs).toISOString(),
      durationMs: Math.max(0, Math.round(durationMs)),
      interrupted,
      source,
    };
    this.messages.push(m);
    return m;
  }
}

const round4 = (n: number) => Math.min(1, Math.max(0, Math.round(n * 10_000) / 10_000));
