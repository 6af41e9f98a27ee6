import { newId } from '@vap/shared';
import type { Frame, SayPurpose } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';
import { ProviderError } from '../providers/provider-error.js';
import type { LlmMessage, LlmProvider, LlmRequest } from '../providers/types.js';
import { DEFAULT_KNOWLEDGE_MAX_CHARS, knowledgeMessage, retrieveWithin } from '../session/knowledge.js';
import type { KnowledgeOptions } from '../session/knowledge.js';

export interface ConversationOptions {
  llm: LlmProvider;
  systemPrompt: string;
  /** Model and sampling settings passed through unchanged (agent `llm`). */
  settings: Omit<LlmRequest, 'messages'>;
  clock: () => number;
  /**
   * The agent's knowledge base (agents with `knowledgeBaseIds`): each spoken caller turn
   * retrieves passages first, and they go to the LLM with that turn's request only.
   */
  knowledge?: KnowledgeOptions;
}

interface AgentTurn {
  id: string;
  controller: AbortController;
}

/**
 * Holds the conversation context and runs one LLM completion per caller turn. Each agent
 * turn owns an AbortController; `interrupt` (or a newer caller turn) aborts it, which
 * cancels the LLM HTTP stream. The assistant's words enter the context only once the
 * session reports what the caller actually heard (`agent.spoken`, truncated on barge-in).
 */
export class Conversation extends Processor {
  readonly name = 'Conversation';
  private readonly history: LlmMessage[];
  private readonly turns = new Map<string, AgentTurn>();

  constructor(private readonly opts: ConversationOptions) {
    super();
    this.history = [{ role: 'system', content: opts.systemPrompt }];
  }

  /** The context as the next LLM request would see it. */
  get messages(): readonly LlmMessage[] {
    return this.history;
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      if (frame.kind === 'agent.spoken' && frame.heardText.trim()) this.history.push({ role: 'assistant', content: frame.heardText.trim() });
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'user.turn': {
        this.push(frame);
        if (this.turns.size > 0) this.abortAll(frame.at, frame.turn.startAt);
        const content = frame.turn.source === 'dtmf' ? `[DTMF] ${frame.turn.text}` : frame.turn.text;
        this.history.push({ role: 'user', content });
        void this.reply(frame.at, frame.turn.source === 'dtmf' ? null : frame.turn.text);
        return;
      }
      case 'agent.say':
        this.say(frame.text, frame.purpose, frame.at);
        return;
      case 'interrupt':
        this.abortAll(frame.at, frame.speechOnsetAt, false);
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
  }

  private say(text: string, purpose: SayPurpose, at: number): void {
    const id = newId('turn');
    this.push({ kind: 'agent.turn-start', turnId: id, source: 'system', purpose, at });
    this.push({ kind: 'llm.text', turnId: id, text, at });
    this.push({ kind: 'llm.done', turnId: id, at });
  }

  /** `query`: the caller's words to retrieve knowledge for (null: no retrieval, e.g. DTMF digits). */
  private async reply(at: number, query: string | null): Promise<void> {
    const turn: AgentTurn = { id: newId('turn'), controller: new AbortController() };
    this.turns.set(turn.id, turn);
    this.push({ kind: 'agent.turn-start', turnId: turn.id, source: 'llm', purpose: 'reply', at });
    let first = true;
    try {
      // Without retrieval the request goes out synchronously, as before knowledge bases existed.
      const knowledge = this.opts.knowledge;
      const messages = knowledge && query?.trim() ? await this.withKnowledge(turn, knowledge, query) : [...this.history];
      if (turn.controller.signal.aborted) return;
      const requestAt = this.opts.clock();
      for await (const ev of this.opts.llm.stream({ ...this.opts.settings, messages }, turn.controller.signal)) {
        if (turn.controller.signal.aborted) return;
        const now = this.opts.clock();
        if (ev.type === 'text' && ev.text) {
          if (first) {
            first = false;
            this.llmFirstTokenMs.set(turn.id, now - requestAt);
          }
          this.push({ kind: 'llm.text', turnId: turn.id, text: ev.text, at: now });
        } else if (ev.type === 'usage') {
          this.push({ kind: 'usage', usage: { llmInputTokens: ev.inputTokens, llmOutputTokens: ev.outputTokens }, at: now }, 'up');
        }
      }
      if (!turn.controller.signal.aborted) this.push({ kind: 'llm.done', turnId: turn.id, at: this.opts.clock() });
    } catch (err) {
      if (turn.controller.signal.aborted || (err instanceof Error && err.name === 'AbortError')) return;
      const error =
        err instanceof ProviderError
          ? err
          : new ProviderError({ provider: this.opts.llm.name, capability: 'llm', code: 'llm.failed', message: err instanceof Error ? err.message : String(err), retryable: false, cause: err });
      // Retries happened in the provider wrapper; what reaches here ends the call politely.
      this.push({ kind: 'llm.done', turnId: turn.id, at: this.opts.clock() });
      this.push({ kind: 'error', error, fatal: true, at: this.opts.clock() }, 'up');
    } finally {
      this.turns.delete(turn.id);
    }
  }

  /**
   * The messages of a turn's LLM request: the history, plus (agents with a knowledge base)
   * the retrieved passages as a system message right after the agent's own prompt. That
   * message is built per request and never enters the history: old turns' passages do not
   * pile up in the context.
   */
  private async withKnowledge(turn: AgentTurn, knowledge: KnowledgeOptions, query: string): Promise<LlmMessage[]> {
    const startedAt = this.opts.clock();
    const passages = await retrieveWithin(knowledge, query, turn.controller.signal);
    this.retrievalMs.set(turn.id, this.opts.clock() - startedAt);
    // The history as it is now: a barge-in during retrieval may have added the heard reply.
    const messages = [...this.history];
    const content = knowledgeMessage(passages, knowledge.maxChars ?? DEFAULT_KNOWLEDGE_MAX_CHARS);
    if (content === null) return messages;
    const at = messages[0]?.role === 'system' ? 1 : 0;
    messages.splice(at, 0, { role: 'system', content });
    return messages;
  }

  /** LLM request → first token per turn, read by the session for turn metrics. */
  readonly llmFirstTokenMs = new Map<string, number>();
  /** Caller turn → knowledge passages in hand, per turn that retrieved (read by the session). */
  readonly retrievalMs = new Map<string, number>();

  private abortAll(at: number, speechOnsetAt: number, announce = true): void {
    for (const t of this.turns.values()) t.controller.abort();
    this.turns.clear();
    this.llmFirstTokenMs.clear();
    this.retrievalMs.clear();
    // A newer caller turn supersedes replies not yet heard: tell the processors below.
    if (announce) this.push({ kind: 'interrupt', cause: 'superseded', at, speechOnsetAt });
  }
}
