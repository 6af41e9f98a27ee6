/**
 * What the sandbox call prints once the call is over: the transcript, the per-turn
 * latency next to the gateway's breakdown, the barge-in reaction and the conversation.
 * Pure formatting over what was measured and fetched; no I/O.
 */
import type { CallerTurnTiming, PlayedChunk } from '@vap/media-gateway/simulators';
import type { CallSummary } from '../../media-gateway/src/call-sessions.js';
import type { ScriptedTurn } from './conversation-script.js';

/** A message as `GET /conversations/{id}/messages` returns it (the platform's stored transcript). */
export interface StoredMessage {
  role: 'agent' | 'user';
  content: string;
  durationMs: number;
  interrupted: boolean;
}

/** Agent audio the caller heard between two of its own lines. */
export interface AgentSegment {
  /** Milliseconds of non-silent agent audio that played. */
  heardMs: number;
  /** A `clear` (barge-in) stopped it. */
  cut: boolean;
}

/**
 * Splits the agent audio the caller heard at the end of each caller line: segment 0 is
 * the greeting, segment k the answer to line k-1. A segment is cut when a `clear`
 * arrived inside it (`clears`: the carrier's, plus the barge-ins' `clearedAt` for a
 * carrier without one).
 */
export function agentSegments(played: readonly PlayedChunk[], clears: readonly number[], timings: readonly CallerTurnTiming[]): AgentSegment[] {
  const bounds = [-Infinity, ...timings.map((t) => t.speechEndedAt), Infinity];
  const segments: AgentSegment[] = [];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const [from, to] = [bounds[k]!, bounds[k + 1]!];
    const chunks = played.filter((c) => c.startedAt >= from && c.startedAt < to);
    const heardMs = chunks.reduce((sum, c) => sum + (c.endedAt - c.startedAt), 0);
    const first = chunks[0]?.startedAt;
    segments.push({ heardMs, cut: first !== undefined && clears.some((at) => at > first && at < to) });
  }
  return segments;
}

/**
 * What the agent's LLM was last told about the conversation (the simulated LLM logs every
 * request): the greeting, and for each caller line the agent message that followed it,
 * as the platform recorded it was heard (an interrupted answer is cut where the caller
 * stopped hearing it). `undefined` where the log holds nothing, e.g. the final answer.
 */
export interface AgentMemory {
  greeting: string | undefined;
  replies: (string | undefined)[];
}

/**
 * Picks, among logged LLM request bodies (parsed JSON, as the simulator's `/__sim/requests`
 * returns them), the longest history whose caller lines are this call's lines.
 */
export function agentMemory(requestBodies: readonly unknown[], lines: readonly string[]): AgentMemory | null {
  let best: { role: string; content: string }[] | null = null;
  let bestUsers = 0;
  for (const body of requestBodies) {
    const raw = (body as { messages?: unknown } | null)?.messages;
    if (!Array.isArray(raw)) continue;
    const messages = (raw as { role?: unknown; content?: unknown }[]).map((m) => ({ role: String(m?.role), content: typeof m?.content === 'string' ? m.content : '' }));
    const users = messages.filter((m) => m.role === 'user').map((m) => m.content.trim());
    const ours = users.length > 0 && users.length <= lines.length && users.every((u, i) => u === lines[i]);
    if (ours && users.length >= bestUsers) [best, bestUsers] = [messages, users.length];
  }
  if (!best) return null;
  const memory: AgentMemory = { greeting: undefined, replies: lines.map(() => undefined) };
  let userIndex = -1;
  for (const m of best) {
    if (m.role === 'user') userIndex++;
    else if (m.role === 'assistant') {
      if (userIndex < 0) memory.greeting ??= m.content;
      else memory.replies[userIndex] ??= m.content;
    }
  }
  return memory;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The platform's stored transcript: exact, including what was heard of a cut answer. */
export function storedTranscript(messages: readonly StoredMessage[]): string[] {
  return messages.flatMap((m) => {
    const line = `  ${m.role === 'agent' ? 'Agent ' : 'Caller'}  ${m.content}`;
    if (m.role !== 'agent' || !m.interrupted) return [line];
    return [`${line}…`, `          [CUT by the caller after ${seconds(m.durationMs)} of audio: the text above is what was heard]`];
  });
}

/**
 * The call as the caller experienced it: its own lines, and for each agent answer the
 * scripted reply (or, with a live LLM, only how much audio played). The text of the
 * greeting and of the part of a cut answer that was heard come from the agent's memory
 * when it is available.
 */
export function callerViewTranscript(input: {
  turns: readonly ScriptedTurn[];
  segments: readonly AgentSegment[];
  llmScripted: boolean;
  memory: AgentMemory | null;
}): string[] {
  const { turns, segments, llmScripted, memory } = input;
  const out: string[] = [];
  const greeting = segments[0];
  if (greeting && greeting.heardMs > 0) {
    out.push(`  Agent   ${memory?.greeting ?? `(greeting, ${seconds(greeting.heardMs)} of audio; its text is in the stored transcript: see --api-key)`}`);
  }
  turns.forEach((turn, i) => {
    out.push(`  Caller  ${turn.say}${turn.interrupts ? '   (said over the agent)' : ''}`);
    const seg = segments[i + 1];
    if (!seg || seg.heardMs === 0) {
      out.push('  Agent   (no answer heard)');
      return;
    }
    const text = llmScripted ? turn.reply : `(answer from the live LLM, ${seconds(seg.heardMs)} of audio)`;
    if (!seg.cut) {
      out.push(`  Agent   ${text}`);
      return;
    }
    const heard = memory?.replies[i];
    out.push(`  Agent   ${text}`);
    out.push(`          [CUT by the caller after ${seconds(seg.heardMs)} of audio${heard ? `; heard: "${heard}"` : ''}]`);
  });
  return out;
}

/** One row per caller line: latency measured at the caller next to the gateway's breakdown. */
export function latencyTable(timings: readonly CallerTurnTiming[], summary: Pick<CallSummary, 'turnMetrics'> | null): string[] {
  const metrics = summary?.turnMetrics ?? [];
  const paired = metrics.length === timings.length;
  const ms = (v: number | null | undefined) => (v === null || v === undefined ? '–' : `${Math.round(v)}`);
  const header = ['#', 'caller line', 'caller', 'endpoint', 'STT final', 'retrieval', 'LLM 1st tok', 'LLM 1st phrase', 'TTS 1st byte', 'overhead', 'gw total'];
  const rows = timings.map((t, i) => {
    const m = paired ? metrics[i] : undefined;
    const line = t.said.length > 32 ? `${t.said.slice(0, 31)}…` : t.said;
    return [String(i + 1), line, ms(t.latencyMs), ms(m?.endpointingMs), ms(m?.sttMs), ms(m?.retrievalMs), ms(m?.llmFirstTokenMs), ms(m?.llmFirstPhraseMs), ms(m?.ttsFirstByteMs), ms(m?.overheadMs), ms(m?.totalMs)];
  });
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const fmt = (r: string[]) => `  ${r.map((cell, c) => (c === 1 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')}`.trimEnd();
  const out = [fmt(header), ...rows.map(fmt)];
  if (!summary) out.push('  (the gateway kept no summary of this call: its breakdown is missing)');
  else if (!paired) {
    out.push(`  The gateway measured ${metrics.length} agent answers for ${timings.length} caller lines, so they are not paired; the gateway's turns in order:`);
    metrics.forEach((m, i) =>
      out.push(`    ${i + 1}. endpoint ${m.endpointingMs}, STT final ${m.sttMs}, retrieval ${m.retrievalMs}, LLM 1st token ${m.llmFirstTokenMs}, LLM 1st phrase ${m.llmFirstPhraseMs}, TTS 1st byte ${m.ttsFirstByteMs}, overhead ${m.overheadMs}, total ${m.totalMs} ms`),
    );
  }
  return out;
}

/** The barge-in reaction as the caller measured it and as the gateway did. */
export function bargeInLines(timings: readonly CallerTurnTiming[], summary: Pick<CallSummary, 'bargeInReactionMs'> | null): string[] {
  const over = timings.filter((t) => t.bargeInReactionMs !== undefined);
  if (over.length === 0) return [];
  return over.map((t, i) => {
    const caller = t.bargeInReactionMs === null || t.bargeInReactionMs === undefined ? 'no clear received (the agent had stopped talking)' : `${t.bargeInReactionMs} ms`;
    const gw = summary?.bargeInReactionMs[i];
    return `  Barge-in on "${t.said}": speech onset → agent audio cleared: ${caller} at the caller; ${gw === undefined ? 'no barge-in recorded by the gateway' : `${Math.round(gw)} ms in the gateway (onset → clear sent)`}`;
  });
}
