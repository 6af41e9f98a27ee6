import type { AgentConfig } from '@vap/shared';
import { renderTemplate } from '@vap/voice-pipeline';
import type { LlmMessage, LlmProvider } from '@vap/voice-pipeline';
import type { MessagingChannel } from './repository.js';

/**
 * Longest wait for a whole text reply (ms). Twilio gives a messaging webhook 15 s before
 * it gives up on the response; 10 s leaves time for the database and the answer.
 */
export const MESSAGING_REPLY_TIMEOUT_MS = 10_000;

/** How many earlier messages of the thread the model sees (the oldest are left out past it). */
export const MESSAGING_HISTORY_LIMIT = 40;

/** Longest reply per channel in characters: Twilio's `Body` limit, Telegram's `sendMessage` text limit. */
export const REPLY_MAX_CHARS: Record<MessagingChannel, number> = { sms: 1600, whatsapp: 1600, telegram: 4096 };

/** What the prompt template may use about the thread. */
export interface ThreadContext {
  channel: MessagingChannel;
  conversationId: string;
  /** The sender's number (SMS, WhatsApp), or null (Telegram). */
  callerNumber: string | null;
  /** The agent's number the message was sent to, or null (Telegram). */
  calledNumber: string | null;
  metadata: Record<string, string>;
  now: Date;
}

const CHANNEL_NAMES: Record<MessagingChannel, string> = { sms: 'SMS', whatsapp: 'WhatsApp', telegram: 'Telegram' };

/**
 * The system message of a text thread: the agent's persona and rendered template, like a
 * call's (`buildSystemPrompt`), but told it is writing short plain-text messages instead
 * of speaking on a phone line. `{{callSid}}` renders as the conversation id.
 */
export function messagingSystemPrompt(agent: AgentConfig, ctx: ThreadContext): string {
  const persona = [`You are ${agent.persona.name}${agent.persona.role ? `, ${agent.persona.role}` : ''}.`, agent.persona.personality ? `Personality: ${agent.persona.personality}` : ''];
  const template = renderTemplate(agent.systemPromptTemplate, agent, { callerNumber: ctx.callerNumber, calledNumber: ctx.calledNumber, callSid: ctx.conversationId, metadata: ctx.metadata, now: ctx.now });
  return [...persona, template, `You are replying in a ${CHANNEL_NAMES[ctx.channel]} conversation: answer in a few short plain-text sentences, no markdown.`].filter(Boolean).join('\n\n');
}

/** The request messages: the system prompt, then the thread's last messages in order (the newest user message included). */
export function replyMessages(system: string, history: readonly { role: 'agent' | 'user'; content: string }[]): LlmMessage[] {
  const recent = history.slice(-MESSAGING_HISTORY_LIMIT).filter((m) => m.content.trim() !== '');
  return [{ role: 'system', content: system }, ...recent.map((m): LlmMessage => (m.role === 'user' ? { role: 'user', content: m.content } : { role: 'assistant', content: m.content }))];
}

/** Cuts `text` to `maxChars`, at the last space when there is one in the final fifth, with an ellipsis. */
export function cutReply(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const room = text.slice(0, maxChars - 1);
  const space = room.lastIndexOf(' ');
  return `${space > maxChars * 0.8 ? room.slice(0, space) : room}…`;
}

/** A reply the model produced, and what it cost in tokens. */
export interface GeneratedReply {
  text: string;
  inputTokens: number;
  outputTokens: number;
}

/**
 * Runs one completion and collects its text. Tool calls are not offered (a text thread has
 * no tools yet); an empty reply is an error, so the caller answers with its apology.
 * Throws `ProviderError` on provider failure; `signal` (the caller's timeout) cancels.
 */
export async function generateReply(llm: LlmProvider, settings: AgentConfig['llm'], messages: LlmMessage[], signal: AbortSignal): Promise<GeneratedReply> {
  let text = '';
  let inputTokens = 0;
  let outputTokens = 0;
  const request = {
    model: settings.model,
    messages,
    ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
    ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {}),
    ...(settings.topP !== undefined ? { topP: settings.topP } : {}),
    ...(settings.frequencyPenalty !== undefined ? { frequencyPenalty: settings.frequencyPenalty } : {}),
    ...(settings.presencePenalty !== undefined ? { presencePenalty: settings.presencePenalty } : {}),
  };
  for await (const event of llm.stream(request, signal)) {
    if (event.type === 'text') text += event.text;
    else if (event.type === 'usage') ({ inputTokens, outputTokens } = event);
  }
  const trimmed = text.trim();
  if (trimmed === '') throw new Error('the model returned an empty reply');
  return { text: trimmed, inputTokens, outputTokens };
}
