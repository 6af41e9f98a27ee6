import type { AgentConfig } from '@vap/shared';
import { agentConfigSchema } from '@vap/shared';
import { describe, expect, it } from 'vitest';
import type { PromptContext } from '../../src/session/prompt.js';
import { buildSystemPrompt, renderTemplate } from '../../src/session/prompt.js';

function agent(over: Record<string, unknown> = {}): AgentConfig {
  return agentConfigSchema.parse({
    name: 'Front desk',
    persona: { name: 'Ava', role: 'the receptionist of Smile Dental' },
    voice: { provider: 'elevenlabs', voiceId: 'voice-1' },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    transcription: { provider: 'deepgram', language: 'en-US' },
    systemPromptTemplate: 'Help the caller.',
    ...over,
  });
}

const NOW = new Date('2025-03-14T23:30:00.000Z');
const ctx = (over: Partial<PromptContext> = {}): PromptContext => ({ callerNumber: '+14155550123', calledNumber: '+14155550100', callSid: 'CA123', metadata: {}, now: NOW, ...over });

describe('renderTemplate', () => {
  it('fills {{callerNumber}} and the other call built-ins', () => {
    const out = renderTemplate('Caller {{callerNumber}} dialled {{ calledNumber }} on {{callSid}}; you are {{agentName}}.', agent(), ctx());
    expect(out).toBe('Caller +14155550123 dialled +14155550100 on CA123; you are Ava.');
    expect(renderTemplate('[{{callerNumber}}]', agent(), ctx({ callerNumber: null }))).toBe('[]');
  });

  it("formats {{date}} in the agent's locale", () => {
    expect(renderTemplate('{{date}}', agent(), ctx())).toBe('March 14, 2025');
    expect(renderTemplate('{{date}}', agent({ transcription: { provider: 'deepgram', language: 'fr-FR' } }), ctx())).toBe('14 mars 2025');
    expect(renderTemplate('{{date}} {{dayOfWeek}}', agent({ transcription: { provider: 'deepgram', language: 'de-DE' } }), ctx())).toBe('14. März 2025 Freitag');
  });

  it('formats dates in the time zone given by metadata', () => {
    // 23:30 UTC on Friday is already Saturday morning in Tokyo.
    expect(renderTemplate('{{date}}, {{dayOfWeek}}', agent(), ctx({ metadata: { timezone: 'Asia/Tokyo' } }))).toBe('March 15, 2025, Saturday');
    expect(renderTemplate('{{date}}', agent(), ctx({ timeZone: 'America/Los_Angeles', metadata: { timezone: 'Asia/Tokyo' } }))).toBe('March 14, 2025');
  });

  it('keeps each zone and locale apart across calls (formatters are reused), and falls back to en-US in UTC for unknown ones', () => {
    for (let i = 0; i < 2; i++) {
      expect(renderTemplate('{{dateTime}}', agent(), ctx({ metadata: { timezone: 'Asia/Tokyo' } }))).toBe('March 15, 2025 at 8:30 AM');
      expect(renderTemplate('{{dateTime}}', agent(), ctx({ metadata: { timezone: 'Europe/Paris' } }))).toBe('March 15, 2025 at 12:30 AM');
      expect(renderTemplate('{{time}}', agent({ transcription: { provider: 'deepgram', language: 'de-DE' } }), ctx({ metadata: { timezone: 'Europe/Paris' } }))).toBe('00:30');
    }
    expect(renderTemplate('{{time}} {{date}}', agent(), ctx({ metadata: { timezone: 'Not/A_Zone' } }))).toBe('11:30 PM March 14, 2025');
  });

  it('fills metadata variables', () => {
    expect(renderTemplate('Hello {{customerName}}, order {{order_id}}.', agent(), ctx({ metadata: { customerName: 'Dana', order_id: 'A-17' } }))).toBe('Hello Dana, order A-17.');
  });

  it('renders unknown variables as empty strings, including names of Object.prototype members', () => {
    expect(renderTemplate('a{{missing}}b{{toString}}c{{constructor}}d{{__proto__}}e', agent(), ctx())).toBe('abcde');
  });
});

describe('buildSystemPrompt', () => {
  it('joins persona, the rendered template and the phone-call rules, with the DTMF hint only when enabled', () => {
    const plain = buildSystemPrompt(agent({ systemPromptTemplate: 'Caller: {{callerNumber}}.' }), ctx());
    expect(plain).toBe(
      [
        'You are Ava, the receptionist of Smile Dental.',
        'Caller: +14155550123.',
        'You are speaking on a live phone call: answer in short spoken sentences, no lists, no markdown, no emojis.',
      ].join('\n\n'),
    );
    expect(buildSystemPrompt(agent({ dtmfEnabled: true }), ctx())).toContain('[DTMF] 5');
  });
});
