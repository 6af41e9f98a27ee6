/**
 * What the OpenAI simulator answers to a structured-output request (`response_format:
 * json_schema`): for the schema named `conversation_analysis` a plausible analysis derived
 * from the transcript in the prompt, for any other schema a minimal value of the schema's
 * shape. Deterministic word heuristics, not a model: the same prompt gets the same answer.
 */
import { ANALYSIS_SCHEMA_NAME, sentimentOfScore } from '../../analysis/analysis-schema.js';
import { contentText } from './tokens.js';
import type { SimWireMessage } from './sim-script.js';

/** The part of JSON Schema the simulator walks (the strict structured-output subset). */
export interface SimJsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, SimJsonSchema>;
  required?: string[];
  additionalProperties?: boolean | SimJsonSchema;
  items?: SimJsonSchema;
  anyOf?: SimJsonSchema[];
  description?: string;
}

/** Schema name whose replies are derived from a transcript rather than sampled (the platform's post-call analysis). */
export { ANALYSIS_SCHEMA_NAME };

/** One transcript line found in the prompt. */
interface Line {
  speaker: 'agent' | 'user';
  text: string;
}

const POSITIVE = ['thank', 'thanks', 'great', 'perfect', 'good', 'happy', 'love', 'excellent', 'awesome', 'appreciate', 'wonderful', 'helpful', 'glad', 'fantastic', 'nice', 'pleased', 'sorted', 'brilliant'];
const NEGATIVE = ['angry', 'bad', 'terrible', 'awful', 'frustrated', 'frustrating', 'upset', 'disappointed', 'hate', 'problem', 'broken', 'worst', 'complaint', 'wrong', 'annoyed', 'unacceptable', 'useless', 'ridiculous', 'horrible', 'poor'];
const NEGATORS = new Set(['not', 'never', 'no', "don't", "isn't", "wasn't", "didn't", "doesn't", "aren't"]);
const STOPWORDS = new Set(
  'the a an and or but if then so to of in on at for with from by about as is are was were be been am i you he she it we they me my your our their this that these those there here what when where which who how can could would should will just like want need have has had do does did not no yes hello hi okay ok please thanks thank really very some any also than them him her its been get got make made call calling'.split(' '),
);

/** Intent labels, first match wins; each is a snake_case label as the analysis prompt asks. */
const INTENTS: [label: string, words: RegExp][] = [
  ['cancel_service', /\bcancel/i],
  ['request_refund', /\brefund/i],
  ['book_appointment', /\b(book|appointment|schedul|reserv|table for)/i],
  ['billing_question', /\b(bill|invoice|charge|payment)/i],
  ['technical_support', /\b(not working|broken|error|problem|issue|fix)/i],
  ['pricing_inquiry', /\b(price|cost|how much|quote)/i],
  ['place_order', /\b(order|buy|purchase)/i],
  ['speak_to_human', /\b(human|representative|real person|manager|operator)/i],
  ['opening_hours', /\b(open|hours|closing)/i],
];

const ENTITY_PATTERNS: [type: string, pattern: RegExp][] = [
  ['email', /\b[\w.+-]+@[\w-]+\.[\w.-]+\b/g],
  ['phone_number', /\+?\d[\d\s().-]{7,}\d/g],
  ['money', /[$€£]\s?\d+(?:[.,]\d{1,2})?/g],
  ['time', /\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b/gi],
  ['date', /\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today|january|february|march|april|may|june|july|august|september|october|november|december)\b/gi],
];

const words = (text: string): string[] => text.toLowerCase().match(/[a-z']+/g) ?? [];
const round2 = (n: number): number => Math.round(n * 100) / 100;
const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`);
const nonNullType = (s: SimJsonSchema): string | undefined => (Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type);

/** Transcript lines (`Agent: …`, `Caller: …`) of every user/system message of the prompt. */
function transcriptLines(messages: readonly SimWireMessage[]): Line[] {
  const lines: Line[] = [];
  for (const m of messages) {
    if (m.role !== 'user' && m.role !== 'system') continue;
    for (const match of contentText(m.content).matchAll(/^(Agent|Assistant|Caller|User):[ \t]*(.*)$/gim)) {
      const who = (match[1] ?? '').toLowerCase();
      const text = (match[2] ?? '').trim();
      if (text !== '') lines.push({ speaker: who === 'agent' || who === 'assistant' ? 'agent' : 'user', text });
    }
  }
  return lines;
}

/** -1 (negative) … 1 (positive) from word counts, a negator flipping the next sentiment word. */
export function sentimentScoreOf(text: string): number {
  const ws = words(text);
  let pos = 0;
  let neg = 0;
  ws.forEach((w, i) => {
    const negated = i > 0 && NEGATORS.has(ws[i - 1] ?? '');
    // Stems of five letters or more also match longer forms (thanks, problems); short words only themselves (not goodbye).
    const hits = (stem: string): boolean => w === stem || (stem.length >= 5 && w.startsWith(stem));
    const isPos = POSITIVE.some(hits);
    const isNeg = NEGATIVE.some(hits);
    // A negated word counts for the other side ("not happy" is negative, "not bad" positive).
    if (isPos !== isNeg && isPos !== negated) pos++;
    else if (isPos !== isNeg) neg++;
  });
  return pos + neg === 0 ? 0 : round2((pos - neg) / (pos + neg));
}

/** The first option the text mentions as a whole word (case-insensitive; `_` and `-` read as spaces). */
function mentionedOption(options: readonly unknown[], text: string): string | undefined {
  const spaced = (v: string): string => v.toLowerCase().replace(/[_-]+/g, ' ');
  const haystack = ` ${spaced(text)} `;
  return options.find((o): o is string => typeof o === 'string' && new RegExp(`[^a-z0-9]${spaced(o).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^a-z0-9]`).test(haystack));
}

/** A minimal value of the schema's shape: first enum value, empty string, 0, false, {} with every property, []. */
export function sampleOfSchema(schema: SimJsonSchema): unknown {
  if (schema.enum) return schema.enum.find((v) => v !== null) ?? schema.enum[0] ?? null;
  if (schema.anyOf?.[0]) return sampleOfSchema(schema.anyOf[0]);
  switch (nonNullType(schema)) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sampleOfSchema(v)]));
    case 'array':
      return [];
    case 'string':
      return '';
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
}

/**
 * The analysis the simulator "infers": sentiment from positive/negative words, intent from
 * keyword rules over the caller's lines, entities by pattern, topics from the caller's most
 * frequent words, a summary quoting the caller, custom fields by option mentioned.
 */
export function analysisReply(messages: readonly SimWireMessage[], schema: SimJsonSchema): Record<string, unknown> {
  const lines = transcriptLines(messages);
  const userText = lines.filter((l) => l.speaker === 'user').map((l) => l.text).join(' ');
  const agentText = lines.filter((l) => l.speaker === 'agent').map((l) => l.text).join(' ');
  const allText = `${userText} ${agentText}`;
  const userScore = sentimentScoreOf(userText);
  const agentScore = sentimentScoreOf(agentText);
  const intent = INTENTS.find(([, re]) => re.test(userText))?.[0] ?? 'general_inquiry';
  const firstUser = lines.find((l) => l.speaker === 'user')?.text ?? '';
  const userTurns = lines.filter((l) => l.speaker === 'user').length;
  const agentTurns = lines.length - userTurns;
  const counts = new Map<string, number>();
  for (const w of words(userText)) if (w.length >= 4 && !STOPWORDS.has(w)) counts.set(w, (counts.get(w) ?? 0) + 1);
  const topics = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3).map(([w]) => w);
  const entities: { type: string; value: string }[] = [];
  for (const [type, re] of ENTITY_PATTERNS) for (const m of userText.matchAll(re)) if (!entities.some((e) => e.value === m[0].trim())) entities.push({ type, value: m[0].trim() });
  const quality = Math.max(0, Math.min(10, 7 + (userScore > 0.25 ? 2 : userScore < -0.25 ? -2 : 0) + (agentTurns < userTurns ? -1 : 0)));

  const derived: Record<string, unknown> = {
    sentiment: sentimentOfScore(userScore),
    sentimentScore: userScore,
    sentimentBreakdown: { agent: agentScore, user: userScore },
    intent,
    entities,
    summary: lines.length === 0 ? 'No conversation took place.' : `The caller wanted ${intent.replace(/_/g, ' ')}. They said: "${clip(firstUser, 120)}". The agent answered ${agentTurns} time(s).`,
    topics,
    callQualityScore: quality,
    agentPerformanceNotes: agentTurns < userTurns ? 'The agent left some of the caller\'s turns unanswered.' : 'The agent answered every turn of the caller.',
  };
  const out: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    if (name === 'customFields') out[name] = customFieldsReply(prop, userText, allText);
    else out[name] = name in derived ? derived[name] : sampleOfSchema(prop);
  }
  return out;
}

/** Enum fields: an option the caller (then anyone) mentioned, else the first; string fields: the caller's line that names the field, else the first. */
function customFieldsReply(schema: SimJsonSchema, userText: string, allText: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const sentences = userText.split(/(?<=[.!?])\s+/).filter((s) => s.trim() !== '');
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    if (field.enum) {
      const options = field.enum.filter((o) => o !== null);
      out[name] = mentionedOption(options, userText) ?? mentionedOption(options, allText) ?? options[0] ?? null;
    } else if (nonNullType(field) === 'string') {
      const keys = name.split(/_|(?=[A-Z])/).map((k) => k.toLowerCase()).filter((k) => k.length >= 3);
      const hit = sentences.find((s) => keys.some((k) => s.toLowerCase().includes(k))) ?? sentences[0] ?? '';
      out[name] = clip(hit.trim(), 80);
    } else {
      out[name] = sampleOfSchema(field);
    }
  }
  return out;
}
