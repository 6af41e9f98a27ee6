/**
 * What the gateway's event loop and its pipeline threads say to each other about the calls
 * a thread runs (`pipeline-threads.ts` on the gateway's side, `pipeline-worker-body.ts` in
 * the thread). Messages go in batches (arrays, in order) over the worker's port: one
 * `postMessage` per turn of the sender's event loop, not one per 20 ms frame.
 */
import type { AgentConfig } from '@vap/shared';
import type { KnowledgePassage, ProviderEndpoints, RecordedMessage, RecordedTurn, SessionStatus, TurnMetrics, Usage } from '@vap/voice-pipeline';

/** Everything a thread needs to run one call's voice session. Plain data (structured clone). */
export interface SessionInit {
  agent: AgentConfig;
  endpoints: ProviderEndpoints;
  ttsFirstByteTimeoutMs: number | undefined;
  call: { callSid: string; from: string | null; to: string | null; metadata: Record<string, string> };
  /** Epoch ms of the call's start. */
  startedAtMs: number;
  /** The gateway logger's level; the session's log lines come back to the gateway's logger. */
  logLevel: string;
  /** The agent has a knowledge base: its turns ask the gateway (`retrieve`) for passages. */
  knowledge: { timeoutMs: number; maxChars: number } | null;
}

/** A call's end as the gateway needs it: {@link SessionOutcome} with the record's data, not its class. */
export interface SessionResult {
  status: SessionStatus;
  endReason: string;
  error: { code: string; message: string } | null;
  durationMs: number;
  language: string;
  record: { messages: RecordedMessage[]; turns: RecordedTurn[]; usage: Usage; metrics: TurnMetrics[] };
}

/** A {@link ProviderError}'s fields (the class does not survive the thread boundary). */
export interface ProviderErrorFields {
  provider: string;
  capability: 'stt' | 'llm' | 'tts';
  code: string;
  message: string;
  retryable: boolean;
  status: number | undefined;
  requestId: string | undefined;
}

/** Gateway → thread, per call (`s`, the call's number on that thread). */
export type ToThread =
  | { t: 'open'; s: number; init: SessionInit }
  | { t: 'start'; s: number }
  | { t: 'audio'; s: number; a: Uint8Array }
  | { t: 'dtmf'; s: number; digit: string }
  | { t: 'markPlayed'; s: number; name: string }
  | { t: 'transportEnded'; s: number; reason: 'hangup' | 'socket-lost' | 'local' }
  | { t: 'stop'; s: number; reason: string; status: SessionStatus }
  | { t: 'hungUp'; s: number }
  | { t: 'retrieved'; s: number; id: number; passages: KnowledgePassage[] | null; error: string | null };

/** Thread → gateway, per call: the leg's commands, the session's callbacks, its log lines and its end. */
export type FromThread =
  | { t: 'sendAudio'; s: number; a: Uint8Array }
  | { t: 'sendMark'; s: number; name: string }
  | { t: 'clear'; s: number }
  | { t: 'pause'; s: number }
  | { t: 'resume'; s: number }
  | { t: 'hangup'; s: number }
  | { t: 'message'; s: number; message: RecordedMessage; turn: RecordedTurn }
  | { t: 'error'; s: number; error: ProviderErrorFields; recoverable: boolean }
  | { t: 'turnMetrics'; s: number; metrics: TurnMetrics }
  | { t: 'bargeIn'; s: number; reactionMs: number }
  | { t: 'falseInterruption'; s: number }
  | { t: 'retrieve'; s: number; id: number; query: string }
  | { t: 'log'; s: number; line: string }
  | { t: 'ended'; s: number; result: SessionResult };

/**
 * Collects messages and posts them as one array when the current turn of the event loop is
 * done (`setImmediate`): the frames of every call that arrived in one poll go together.
 */
export class Batcher<M> {
  private queue: M[] = [];
  private scheduled = false;

  constructor(private readonly post: (batch: M[]) => void) {}

  send(message: M): void {
    this.queue.push(message);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Posts what is queued now (also called by the timer). */
  readonly flush = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.post(batch);
  };
}
