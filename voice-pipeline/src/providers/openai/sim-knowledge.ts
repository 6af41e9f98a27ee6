/**
 * The OpenAI simulator's answer from retrieved knowledge (RAG in sandbox calls): when a
 * request carries the call's "Relevant knowledge" system message, the simulated model
 * answers with the passage sentence sharing the most words with the caller's question.
 */
import { KNOWLEDGE_HEADER } from '../../session/knowledge.js';
import { contentText } from './tokens.js';
import type { SimWireMessage } from './sim-script.js';

const STOPWORDS = new Set(
  'a an and are as at be but by can could did do does for from had has have how i if in into is it its me my of on or our please so than that the their them then there these they this to us was we were what when where which who why will with would you your about tell know'.split(' '),
);

/** Lower-cased content words, plural `s` dropped, so "Fridays" meets "friday". */
export function contentWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '').split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || STOPWORDS.has(raw)) continue;
    out.add(raw.length > 3 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw);
  }
  return out;
}

/** The passages' text of a knowledge message: its lines after the preamble, without the `[n] Document:` labels. */
function passageText(content: string): string {
  const blocks = content.split(/\n\s*\n/).slice(1);
  return blocks.map((b) => b.replace(/^\[\d+\][^\n]*:\n/, '')).join('\n');
}

function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?…])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * "According to our information: <sentence>" when the request has a knowledge message and one
 * of its sentences shares a content word with the last user message (the most shared wins;
 * a tie goes to the earlier, i.e. better-ranked, passage); null otherwise.
 */
export function knowledgeReply(messages: readonly SimWireMessage[], question: string): string | null {
  const knowledge = messages.find((m) => m.role === 'system' && contentText(m.content).startsWith(KNOWLEDGE_HEADER));
  if (!knowledge) return null;
  const asked = contentWords(question);
  let best: { sentence: string; shared: number } | null = null;
  for (const sentence of sentencesOf(passageText(contentText(knowledge.content)))) {
    let shared = 0;
    for (const w of contentWords(sentence)) if (asked.has(w)) shared++;
    if (shared > 0 && (!best || shared > best.shared)) best = { sentence, shared };
  }
  if (!best) return null;
  const sentence = /[.!?…]$/u.test(best.sentence) ? best.sentence : `${best.sentence}.`;
  return `According to our information: ${sentence}`;
}
