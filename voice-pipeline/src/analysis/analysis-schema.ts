import type { AgentConfig } from '@vap/shared';

/** The switches and custom fields of an agent's `analysisConfig` that shape an analysis (`enabled` is the caller's business). */
export type AnalysisSettings = Pick<AgentConfig['analysisConfig'], 'sentimentAnalysis' | 'intentDetection' | 'summaryEnabled' | 'customFields'>;

export type Sentiment = 'positive' | 'neutral' | 'negative';

export const SENTIMENTS: readonly Sentiment[] = ['positive', 'neutral', 'negative'];

/** `sentimentScore` and `sentimentBreakdown.*`: -1 very negative … 1 very positive. */
export const SENTIMENT_SCORE_RANGE = { min: -1, max: 1 } as const;

/** The label a score implies: above 0.25 positive, below -0.25 negative, else neutral. */
export function sentimentOfScore(score: number): Sentiment {
  return score > 0.25 ? 'positive' : score < -0.25 ? 'negative' : 'neutral';
}

/** `callQualityScore`: 0 poor … 10 excellent. */
export const QUALITY_SCORE_RANGE = { min: 0, max: 10 } as const;

/** Name of the structured-output schema (the OpenAI simulator derives replies for it). */
export const ANALYSIS_SCHEMA_NAME = 'conversation_analysis';

/**
 * The spec's Analysis fields as produced (without `conversationId`/`completedAt`, which the
 * platform adds). A part switched off (`sentimentAnalysis`, `intentDetection`,
 * `summaryEnabled` false) is null; so is a field the model never got right (never stored
 * invalid). `customFields` has every configured field: an enum value is one of its options or null.
 */
export type ConversationAnalysis = {
  sentiment: Sentiment | null;
  sentimentScore: number | null;
  sentimentBreakdown: { agent: number; user: number } | null;
  intent: string | null;
  entities: { type: string; value: string }[] | null;
  summary: string | null;
  topics: string[] | null;
  customFields: Record<string, string | null>;
  callQualityScore: number | null;
  agentPerformanceNotes: string | null;
};

/** The top-level fields each switch turns on; the rest are always asked for. */
export const ANALYSIS_PARTS = {
  sentimentAnalysis: ['sentiment', 'sentimentScore', 'sentimentBreakdown'],
  intentDetection: ['intent', 'entities'],
  summaryEnabled: ['summary', 'topics'],
  always: ['customFields', 'callQualityScore', 'agentPerformanceNotes'],
} as const satisfies Record<string, readonly (keyof ConversationAnalysis)[]>;

/** The top-level fields asked for under `settings`, in schema order. */
export function enabledAnalysisFields(settings: AnalysisSettings): (keyof ConversationAnalysis)[] {
  return [
    ...(settings.sentimentAnalysis ? ANALYSIS_PARTS.sentimentAnalysis : []),
    ...(settings.intentDetection ? ANALYSIS_PARTS.intentDetection : []),
    ...(settings.summaryEnabled ? ANALYSIS_PARTS.summaryEnabled : []),
    ...ANALYSIS_PARTS.always,
  ];
}

type JsonSchema = Record<string, unknown>;

/** A strict-mode object: every property required, nothing else allowed (OpenAI structured outputs). */
function object(properties: Record<string, JsonSchema>, description?: string): JsonSchema {
  return { type: 'object', ...(description ? { description } : {}), properties, required: Object.keys(properties), additionalProperties: false };
}

const score = (description: string): JsonSchema => ({ type: 'number', description });

/**
 * JSON Schema of the model's reply under `settings`, in the strict subset OpenAI's
 * structured outputs accept (no numeric bounds: ranges are stated in descriptions and
 * enforced by `validateAnalysis`). Only the enabled parts are asked for. An enum custom
 * field may be null when the conversation does not tell.
 */
export function analysisJsonSchema(settings: AnalysisSettings): JsonSchema {
  const s = `${SENTIMENT_SCORE_RANGE.min} (very negative) to ${SENTIMENT_SCORE_RANGE.max} (very positive)`;
  const all: Record<keyof ConversationAnalysis, JsonSchema> = {
    sentiment: { type: 'string', enum: [...SENTIMENTS], description: "The caller's overall sentiment." },
    sentimentScore: score(`The caller's overall sentiment from ${s}.`),
    sentimentBreakdown: object({ agent: score(`The agent's tone from ${s}.`), user: score(`The caller's sentiment from ${s}.`) }),
    intent: { type: 'string', description: "The caller's main goal as a short snake_case label, e.g. book_appointment." },
    entities: {
      type: 'array',
      description: 'Named things the caller mentioned (people, dates, times, amounts, products, order numbers).',
      items: object({ type: { type: 'string', description: 'snake_case kind, e.g. date, person, order_number' }, value: { type: 'string', description: 'As said in the conversation.' } }),
    },
    summary: { type: 'string', description: 'Two or three sentences: what the caller wanted and how it ended.' },
    topics: { type: 'array', items: { type: 'string' }, description: 'Up to five short topics.' },
    customFields: object(
      Object.fromEntries(
        settings.customFields.map((f) => [
          f.name,
          f.type === 'enum'
            ? { type: ['string', 'null'], enum: [...(f.options ?? []), null], description: f.description ?? `One of the options, or null when the conversation does not tell.` }
            : { type: ['string', 'null'], description: f.description ?? 'Short free text, or null when the conversation does not tell.' },
        ]),
      ),
      'Fields the agent owner defined.',
    ),
    callQualityScore: score(`Quality of the call from ${QUALITY_SCORE_RANGE.min} (poor) to ${QUALITY_SCORE_RANGE.max} (excellent).`),
    agentPerformanceNotes: { type: 'string', description: "One or two sentences on the agent's performance." },
  };
  return object(Object.fromEntries(enabledAnalysisFields(settings).map((k) => [k, all[k]])));
}
