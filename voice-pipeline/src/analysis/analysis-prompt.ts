import type { LlmMessage } from '../providers/types.js';
import { QUALITY_SCORE_RANGE, SENTIMENT_SCORE_RANGE, enabledAnalysisFields } from './analysis-schema.js';
import type { AnalysisSettings } from './analysis-schema.js';

/** One message of a finished conversation, in order. */
export interface AnalysisMessage {
  role: 'agent' | 'user';
  content: string;
}

/**
 * Longest transcript sent, in characters (about 15k tokens at OpenAI's 4 chars/token): well
 * inside every supported model's context with the instructions and the reply. Longer calls
 * keep their opening and the larger part of their end, where outcomes are decided.
 */
export const MAX_TRANSCRIPT_CHARS = 60_000;

/**
 * The transcript as the prompt shows it: one line per message, `Agent: …` or `Caller: …`
 * (line breaks inside a message become spaces, so each line is one turn).
 */
export function transcriptText(messages: readonly AnalysisMessage[], maxChars = MAX_TRANSCRIPT_CHARS): string {
  const text = messages
    .map((m) => `${m.role === 'agent' ? 'Agent' : 'Caller'}: ${m.content.replace(/\s+/g, ' ').trim()}`)
    .filter((line) => !/^\w+: $/.test(line))
    .join('\n');
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars / 3);
  const tail = maxChars - head;
  const start = text.lastIndexOf('\n', head);
  const end = text.indexOf('\n', text.length - tail);
  const cutFrom = start > 0 ? start : head;
  const cutTo = end > 0 ? end : text.length - tail;
  return `${text.slice(0, cutFrom)}\n[… ${cutTo - cutFrom} characters of the conversation left out …]${text.slice(cutTo)}`;
}

/**
 * The analysis request's messages: instructions (the fields asked for, their ranges and the
 * custom fields with their options) as the system message, the transcript as the user
 * message. The reply's shape is enforced by the JSON schema sent alongside.
 */
export function buildAnalysisPrompt(messages: readonly AnalysisMessage[], settings: AnalysisSettings): LlmMessage[] {
  const fields = enabledAnalysisFields(settings);
  const rules = [
    'You analyse a finished phone conversation between an AI voice agent ("Agent") and a caller ("Caller").',
    'Answer with one JSON object that matches the conversation_analysis schema, and nothing else.',
    `Fields: ${fields.join(', ')}.`,
  ];
  if (settings.sentimentAnalysis) {
    rules.push(`sentiment is positive, neutral or negative; sentimentScore and sentimentBreakdown.agent/user are numbers from ${SENTIMENT_SCORE_RANGE.min} to ${SENTIMENT_SCORE_RANGE.max}.`);
  }
  if (settings.intentDetection) rules.push('intent is a short snake_case label of what the caller wanted; entities lists {type, value} pairs the caller mentioned.');
  if (settings.summaryEnabled) rules.push('summary is two or three sentences; topics are up to five short phrases.');
  rules.push(`callQualityScore is a number from ${QUALITY_SCORE_RANGE.min} to ${QUALITY_SCORE_RANGE.max}; agentPerformanceNotes is one or two sentences.`);
  if (settings.customFields.length > 0) {
    rules.push('customFields:');
    for (const f of settings.customFields) {
      const what = f.type === 'enum' ? `exactly one of ${(f.options ?? []).map((o) => JSON.stringify(o)).join(', ')}, or null if the conversation does not tell` : 'short free text, or null if the conversation does not tell';
      rules.push(`- ${f.name}: ${what}${f.description ? ` (${f.description})` : ''}`);
    }
  }
  rules.push('Base everything on the transcript only; it may be cut in the middle when long.');
  return [
    { role: 'system', content: rules.join('\n') },
    { role: 'user', content: `Transcript:\n${transcriptText(messages)}` },
  ];
}

/** The follow-up that asks again after a reply broke the schema, naming each problem. */
export function retryPrompt(problems: readonly { field: string; message: string }[]): string {
  return [
    'Your reply does not match the conversation_analysis schema:',
    ...problems.map((p) => `- ${p.field || '(reply)'}: ${p.message}`),
    'Answer again with the complete JSON object only.',
  ].join('\n');
}
