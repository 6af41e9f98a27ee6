import { agentConfigSchema, newId } from '@vap/shared';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { KnowledgeOptions } from '../../src/session/knowledge.js';
import { VoiceSession } from '../../src/session/voice-session.js';
import { callerAudio, levelVad, settle } from './harness.js';
import { FakeLlm, FakeStt, FakeTransport, FakeTts, llmReply } from './pipeline-fakes.js';

const T0 = Date.parse('2025-03-14T09:00:00.000Z');

/** A session on fakes (as voice-session.test.ts) whose agent has a knowledge base served by `knowledge`. */
function setup(knowledge: KnowledgeOptions) {
  const agent = agentConfigSchema.parse({
    name: 'Host',
    persona: { name: 'Ava', role: 'the host of Trattoria Sole' },
    systemPromptTemplate: 'Answer questions about the restaurant.',
    voice: { provider: 'elevenlabs', voiceId: 'voice-1' },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    transcription: { provider: 'deepgram', language: 'en-US' },
    firstMessageMode: 'wait_for_user',
    knowledgeBaseIds: [newId('kb')],
  });
  const stt = new FakeStt();
  const llm = new FakeLlm(() => ({ events: llmReply('Saffron risotto.') }));
  const tts = new FakeTts({ msPerChar: 10 });
  const transport = new FakeTransport({ autoEcho: true });
  const warnings: unknown[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
  const session = new VoiceSession({
    agent,
    providers: { stt, llm, tts },
    transport,
    call: { callSid: 'CA1', from: null, to: null, metadata: {} },
    vad: levelVad(),
    logger,
    knowledge,
    startedAtMs: T0,
    now: () => Date.now(),
  });
  const speak = async (text: string) => {
    for (let t = 0; t < 400; t += 20) {
      session.audio(callerAudio(true));
      await vi.advanceTimersByTimeAsync(20);
    }
    stt.streams[0]!.emit({ type: 'transcript', text, isFinal: true, speechFinal: true, confidence: 0.9, startMs: 0, endMs: 400, words: [] });
    for (let t = 0; t < 100; t += 20) {
      session.audio(callerAudio(false));
      await vi.advanceTimersByTimeAsync(20);
    }
    await settle(300);
  };
  return { session, llm, speak, warnings };
}

describe('VoiceSession with a knowledge base', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('records retrieval as its own stage: retrievalMs is the wait, and overhead does not include it', async () => {
    const { session, llm, speak } = setup({
      retrieve: () => new Promise((resolve) => setTimeout(() => resolve([{ documentName: 'Menu', text: 'The special is saffron risotto.', pageNumber: null }]), 150)),
    });
    session.start();
    await speak('What is the special?');
    await vi.advanceTimersByTimeAsync(200);
    await settle(300);
    expect(llm.calls).toHaveLength(1);
    expect(llm.calls[0]!.request.messages[1]!.content).toContain('saffron risotto');
    await vi.advanceTimersByTimeAsync(1000);
    const [m] = session.record.metrics;
    expect(m).toBeDefined();
    expect(m!.retrievalMs).toBeGreaterThanOrEqual(150);
    expect(m!.retrievalMs).toBeLessThan(200);
    expect(m!.overheadMs).toBeLessThan(50);
    expect(m!.totalMs).toBe(m!.endpointingMs + m!.retrievalMs + m!.llmFirstTokenMs + m!.llmFirstPhraseMs + m!.ttsFirstByteMs + m!.overheadMs);
  });

  it('a retrieval timeout logs a warning and the turn is answered without knowledge', async () => {
    const { session, llm, speak, warnings } = setup({ timeoutMs: 300, retrieve: () => new Promise(() => undefined) });
    session.start();
    await speak('What is the special?');
    await vi.advanceTimersByTimeAsync(350);
    await settle(300);
    expect(llm.calls).toHaveLength(1);
    expect(llm.calls[0]!.request.messages.map((x) => x.role)).toEqual(['system', 'user']);
    expect(warnings).toEqual([expect.objectContaining({ level: 40, timedOut: true, msg: expect.stringContaining('knowledge retrieval failed') })]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(session.record.metrics[0]!.retrievalMs).toBeGreaterThanOrEqual(300);
  });
});
