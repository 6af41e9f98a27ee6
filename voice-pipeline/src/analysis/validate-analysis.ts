import { QUALITY_SCORE_RANGE, SENTIMENTS, SENTIMENT_SCORE_RANGE, enabledAnalysisFields, sentimentOfScore } from './analysis-schema.js';
import type { AnalysisSettings, ConversationAnalysis } from './analysis-schema.js';

/** One way a reply breaks the schema; `field` is a dotted path (`customFields.tier`), empty for the reply as a whole. */
export interface AnalysisProblem {
  field: string;
  message: string;
}

/**
 * A model reply checked against the analysis schema. `value` holds every field that is
 * valid or could be repaired, and null for the others (and for parts switched off);
 * `problems` lists what is still invalid (none: `ok`); `repairs` says what was fixed.
 */
export interface AnalysisValidation {
  ok: boolean;
  value: ConversationAnalysis;
  problems: AnalysisProblem[];
  repairs: string[];
}

type Field = keyof ConversationAnalysis;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Case, spaces, `-` and `_` do not matter when matching an enum value. */
const fold = (v: string): string => v.trim().toLowerCase().replace(/[\s_-]+/g, ' ');

/** The analysis with every field null and every custom field null. */
export function emptyAnalysis(settings: AnalysisSettings): ConversationAnalysis {
  return {
    sentiment: null,
    sentimentScore: null,
    sentimentBreakdown: null,
    intent: null,
    entities: null,
    summary: null,
    topics: null,
    customFields: Object.fromEntries(settings.customFields.map((f) => [f.name, null])),
    callQualityScore: null,
    agentPerformanceNotes: null,
  };
}

/** Parses the reply text: JSON, possibly inside a Markdown code fence (repaired). */
function parseReply(raw: unknown, repairs: string[]): { ok: true; json: unknown } | { ok: false; message: string } {
  if (typeof raw !== 'string') return { ok: true, json: raw };
  let text = raw.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/i.exec(text);
  if (fenced) {
    text = fenced[1] ?? '';
    repairs.push('removed a Markdown code fence around the JSON');
  }
  try {
    return { ok: true, json: JSON.parse(text) };
  } catch {
    return { ok: false, message: 'the reply is not valid JSON' };
  }
}

/**
 * Checks and repairs a reply (its text, or parsed JSON) under `settings`. Repairs: a
 * Markdown fence removed; strings trimmed; enum values matched ignoring case, spaces, `-`
 * and `_`; numbers given as strings parsed and scores clamped to their range; a missing or
 * unknown `sentiment` taken from `sentimentScore`; invalid entities and empty topics
 * dropped, a comma list of topics split; custom string fields given as numbers or booleans
 * turned into text; fields not asked for dropped. Anything else is a problem.
 */
export function validateAnalysis(raw: unknown, settings: AnalysisSettings): AnalysisValidation {
  const repairs: string[] = [];
  const problems: AnalysisProblem[] = [];
  const value = emptyAnalysis(settings);
  const parsed = parseReply(raw, repairs);
  if (!parsed.ok || !isRecord(parsed.json)) {
    problems.push({ field: '', message: parsed.ok ? 'the reply must be a JSON object' : parsed.message });
    return { ok: false, value, problems, repairs };
  }
  const obj = parsed.json;
  const asked = new Set<string>(enabledAnalysisFields(settings));
  for (const key of Object.keys(obj)) if (!asked.has(key)) repairs.push(`dropped ${key} (not asked for)`);
  const problem = (field: string, message: string): void => void problems.push({ field, message });
  const missing = (field: Field): boolean => {
    if (obj[field] !== undefined) return false;
    problem(field, 'is required');
    return true;
  };

  const number = (field: string, v: unknown, range: { min: number; max: number }): number | null => {
    let n = v;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) {
      n = Number(v);
      repairs.push(`${field}: parsed the number from a string`);
    }
    if (typeof n !== 'number' || !Number.isFinite(n)) {
      problem(field, `must be a number from ${range.min} to ${range.max}`);
      return null;
    }
    const clamped = Math.min(range.max, Math.max(range.min, n));
    if (clamped !== n) repairs.push(`${field}: clamped ${n} to ${clamped}`);
    return clamped;
  };
  const text = (field: string, v: unknown, nonEmpty: boolean): string | null => {
    if (typeof v !== 'string' || (nonEmpty && v.trim() === '')) {
      problem(field, nonEmpty ? 'must be a non-empty string' : 'must be a string');
      return null;
    }
    return v.trim();
  };

  if (settings.sentimentAnalysis) {
    if (obj.sentimentScore !== undefined) value.sentimentScore = number('sentimentScore', obj.sentimentScore, SENTIMENT_SCORE_RANGE);
    else problem('sentimentScore', 'is required');
    const label = typeof obj.sentiment === 'string' ? SENTIMENTS.find((s) => s === fold(obj.sentiment as string)) : undefined;
    if (label) {
      if (label !== obj.sentiment) repairs.push(`sentiment: matched ${JSON.stringify(obj.sentiment)} to ${label}`);
      value.sentiment = label;
    } else if (value.sentimentScore !== null) {
      value.sentiment = sentimentOfScore(value.sentimentScore);
      repairs.push(`sentiment: ${obj.sentiment === undefined ? 'missing' : `${JSON.stringify(obj.sentiment)} is not a sentiment`}; taken from sentimentScore`);
    } else {
      problem('sentiment', `must be one of ${SENTIMENTS.join(', ')}`);
    }
    if (!missing('sentimentBreakdown')) {
      const b = obj.sentimentBreakdown;
      if (!isRecord(b)) problem('sentimentBreakdown', 'must be an object {agent, user}');
      else {
        const agent = number('sentimentBreakdown.agent', b.agent, SENTIMENT_SCORE_RANGE);
        const user = number('sentimentBreakdown.user', b.user, SENTIMENT_SCORE_RANGE);
        value.sentimentBreakdown = agent !== null && user !== null ? { agent, user } : null;
      }
    }
  }

  if (settings.intentDetection) {
    if (!missing('intent')) value.intent = text('intent', obj.intent, true);
    if (!missing('entities')) {
      if (!Array.isArray(obj.entities)) problem('entities', 'must be an array of {type, value}');
      else {
        const good = obj.entities.filter((e): e is { type: string; value: string } => isRecord(e) && typeof e.type === 'string' && e.type.trim() !== '' && typeof e.value === 'string' && e.value.trim() !== '');
        if (good.length < obj.entities.length) repairs.push(`entities: dropped ${obj.entities.length - good.length} invalid item(s)`);
        value.entities = good.map((e) => ({ type: e.type.trim(), value: e.value.trim() }));
      }
    }
  }

  if (settings.summaryEnabled) {
    if (!missing('summary')) value.summary = text('summary', obj.summary, true);
    if (!missing('topics')) value.topics = topicsOf(obj.topics, repairs, problem);
  }

  if (!missing('callQualityScore')) value.callQualityScore = number('callQualityScore', obj.callQualityScore, QUALITY_SCORE_RANGE);
  if (!missing('agentPerformanceNotes')) value.agentPerformanceNotes = text('agentPerformanceNotes', obj.agentPerformanceNotes, false);
  value.customFields = customFieldsOf(obj.customFields, settings, repairs, problem);

  return { ok: problems.length === 0, value, problems, repairs };
}

function topicsOf(v: unknown, repairs: string[], problem: (field: string, message: string) => void): string[] | null {
  let list = v;
  if (typeof v === 'string') {
    list = v.split(',');
    repairs.push('topics: split a comma-separated string');
  }
  if (!Array.isArray(list) || list.some((t) => typeof t !== 'string')) {
    problem('topics', 'must be an array of strings');
    return null;
  }
  const topics = [...new Set((list as string[]).map((t) => t.trim()).filter((t) => t !== ''))];
  if (topics.length !== list.length) repairs.push('topics: dropped empty or repeated topics');
  return topics;
}

function customFieldsOf(v: unknown, settings: AnalysisSettings, repairs: string[], problem: (field: string, message: string) => void): Record<string, string | null> {
  const out: Record<string, string | null> = Object.fromEntries(settings.customFields.map((f) => [f.name, null]));
  if (settings.customFields.length === 0) return out;
  if (!isRecord(v)) {
    problem('customFields', `must be an object with ${settings.customFields.map((f) => f.name).join(', ')}`);
    return out;
  }
  for (const key of Object.keys(v)) if (!(key in out)) repairs.push(`customFields: dropped ${key} (not a configured field)`);
  for (const f of settings.customFields) {
    const field = `customFields.${f.name}`;
    const given = v[f.name];
    if (given === undefined) {
      problem(field, 'is required (null when the conversation does not tell)');
    } else if (given === null) {
      out[f.name] = null;
    } else if (f.type === 'enum') {
      const options = f.options ?? [];
      const match = typeof given === 'string' ? options.find((o) => fold(o) === fold(given)) : undefined;
      if (match === undefined) problem(field, `${JSON.stringify(given)} is not one of ${options.map((o) => JSON.stringify(o)).join(', ')}`);
      else {
        if (match !== given) repairs.push(`${field}: matched ${JSON.stringify(given)} to ${JSON.stringify(match)}`);
        out[f.name] = match;
      }
    } else if (typeof given === 'string') {
      out[f.name] = given.trim();
    } else if (typeof given === 'number' || typeof given === 'boolean') {
      out[f.name] = String(given);
      repairs.push(`${field}: turned ${typeof given} into text`);
    } else {
      problem(field, 'must be a string or null');
    }
  }
  return out;
}
