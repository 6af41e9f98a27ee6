import { describe, expect, it } from 'vitest';
import { analysisJsonSchema, buildAnalysisPrompt, transcriptText, validateAnalysis } from '../../src/analysis/index.js';
import type { AnalysisSettings } from '../../src/analysis/index.js';

const settings: AnalysisSettings = {
  sentimentAnalysis: true,
  intentDetection: true,
  summaryEnabled: true,
  customFields: [
    { name: 'tier', type: 'enum', options: ['Gold', 'silver_plus'] },
    { name: 'reason', type: 'string' },
  ],
};

const valid = {
  sentiment: 'positive',
  sentimentScore: 0.6,
  sentimentBreakdown: { agent: 0.4, user: 0.6 },
  intent: 'book_appointment',
  entities: [{ type: 'date', value: 'Friday' }],
  summary: 'The caller booked a table for Friday.',
  topics: ['booking'],
  customFields: { tier: 'Gold', reason: 'birthday' },
  callQualityScore: 8,
  agentPerformanceNotes: 'Clear and quick.',
};

describe('analysisJsonSchema', () => {
  it('asks only for the enabled parts, always with custom fields, quality and notes', () => {
    const schema = analysisJsonSchema({ ...settings, sentimentAnalysis: false, summaryEnabled: false }) as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(schema.properties)).toEqual(['intent', 'entities', 'customFields', 'callQualityScore', 'agentPerformanceNotes']);
    expect(schema.required).toEqual(Object.keys(schema.properties));
  });

  it('is in the strict subset: every object requires all its properties and allows nothing else', () => {
    const walk = (s: Record<string, unknown>): void => {
      if (s.properties) {
        expect(s.additionalProperties).toBe(false);
        expect([...(s.required as string[])].sort()).toEqual(Object.keys(s.properties).sort());
        for (const p of Object.values(s.properties as Record<string, Record<string, unknown>>)) walk(p);
      }
      if (s.items) walk(s.items as Record<string, unknown>);
    };
    walk(analysisJsonSchema(settings));
    const custom = (analysisJsonSchema(settings) as { properties: { customFields: { properties: Record<string, { enum?: unknown[] }> } } }).properties.customFields;
    expect(custom.properties.tier?.enum).toEqual(['Gold', 'silver_plus', null]);
  });
});

describe('validateAnalysis', () => {
  it('accepts a valid reply unchanged', () => {
    const r = validateAnalysis(JSON.stringify(valid), settings);
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
    expect(r.repairs).toEqual([]);
    expect(r.value).toEqual(valid);
  });

  it('repairs case and spacing of enum values, numeric strings, out-of-range scores and a fenced reply', () => {
    const reply = { ...valid, sentiment: ' Positive ', sentimentScore: '3', callQualityScore: 14, customFields: { tier: 'silver plus', reason: '  late delivery ' } };
    const r = validateAnalysis('```json\n' + JSON.stringify(reply) + '\n```', settings);
    expect(r.ok).toBe(true);
    expect(r.value.sentiment).toBe('positive');
    expect(r.value.sentimentScore).toBe(1);
    expect(r.value.callQualityScore).toBe(10);
    expect(r.value.customFields).toEqual({ tier: 'silver_plus', reason: 'late delivery' });
    expect(r.repairs.length).toBeGreaterThanOrEqual(5);
  });

  it('takes a missing sentiment label from the score', () => {
    const { sentiment: _, ...rest } = valid;
    const r = validateAnalysis({ ...rest, sentimentScore: -0.8 }, settings);
    expect(r.ok).toBe(true);
    expect(r.value.sentiment).toBe('negative');
  });

  it('reports an enum value outside the options and leaves it null', () => {
    const r = validateAnalysis({ ...valid, customFields: { tier: 'platinum', reason: 'x' } }, settings);
    expect(r.ok).toBe(false);
    expect(r.problems).toEqual([{ field: 'customFields.tier', message: '"platinum" is not one of "Gold", "silver_plus"' }]);
    expect(r.value.customFields).toEqual({ tier: null, reason: 'x' });
    expect(r.value.summary).toBe(valid.summary);
  });

  it('reports missing fields by name, and a reply that is not JSON as a whole', () => {
    const { summary: _, ...rest } = valid;
    expect(validateAnalysis(rest, settings).problems).toEqual([{ field: 'summary', message: 'is required' }]);
    const notJson = validateAnalysis('Sure! The caller was happy.', settings);
    expect(notJson.problems).toEqual([{ field: '', message: 'the reply is not valid JSON' }]);
    expect(notJson.value.customFields).toEqual({ tier: null, reason: null });
  });

  it('drops parts switched off and fields not asked for', () => {
    const r = validateAnalysis({ ...valid, extra: 1 }, { ...settings, sentimentAnalysis: false });
    expect(r.ok).toBe(true);
    expect(r.value.sentiment).toBeNull();
    expect(r.value.sentimentScore).toBeNull();
    expect(r.value.sentimentBreakdown).toBeNull();
    expect(r.repairs).toEqual(expect.arrayContaining(['dropped extra (not asked for)', 'dropped sentiment (not asked for)']));
  });
});

describe('analysis prompt', () => {
  it('shows one line per message and names every custom field with its options', () => {
    const prompt = buildAnalysisPrompt([{ role: 'agent', content: 'Hi!\nHow can I help?' }, { role: 'user', content: 'Gold tier please' }], settings);
    expect(prompt[1]).toEqual({ role: 'user', content: 'Transcript:\nAgent: Hi! How can I help?\nCaller: Gold tier please' });
    expect(prompt[0]?.content).toContain('- tier: exactly one of "Gold", "silver_plus"');
  });

  it('cuts a long transcript in the middle at line boundaries', () => {
    const lines = Array.from({ length: 400 }, (_, i) => ({ role: i % 2 ? ('user' as const) : ('agent' as const), content: `line ${i} `.repeat(10) }));
    const text = transcriptText(lines, 5_000);
    expect(text.length).toBeLessThan(5_200);
    expect(text).toContain('Agent: line 0');
    expect(text).toContain('line 399');
    expect(text).toMatch(/\n\[… \d+ characters of the conversation left out …\]\n/);
  });
});
