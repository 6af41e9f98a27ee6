import { isId } from '@vap/shared';
import { describe, expect, it } from 'vitest';
import { CallRecord } from '../../src/session/call-record.js';
import { frames, userTurn } from './harness.js';

const T0 = Date.parse('2025-03-14T09:00:00.000Z');

describe('CallRecord', () => {
  it('numbers messages in order with wall-clock timestamps and durations', () => {
    const record = new CallRecord(T0);
    const agent = record.addAgent(frames.spoken('t1', 'Hello, how can I help?', { startedAt: 200, playedMs: 1800.4, purpose: 'first-message' }));
    const user = record.addUser(userTurn('I need an appointment.', { startAt: 2500, endAt: 4000 }));
    expect(record.messages.map((m) => [m.seq, m.role, m.content, m.timestamp, m.durationMs, m.source, m.interrupted])).toEqual([
      [0, 'agent', 'Hello, how can I help?', '2025-03-14T09:00:00.200Z', 1800, 'system', false],
      [1, 'user', 'I need an appointment.', '2025-03-14T09:00:02.500Z', 1500, 'speech', false],
    ]);
    expect(agent!.message).toBe(record.messages[0]);
    expect(user.message).toBe(record.messages[1]);
    expect(isId('msg', user.message.id)).toBe(true);
    expect(record.turns.map((t) => t.seq)).toEqual([0, 1]);
    expect(record.userTurns).toBe(1);
  });

  it('records a user turn with word timings in seconds', () => {
    const record = new CallRecord(T0);
    const { turn } = record.addUser(
      userTurn('Book it', {
        startAt: 1234,
        endAt: 1987,
        confidence: 0.912345,
        words: [
          { word: 'Book', startMs: 1234, endMs: 1500, confidence: 0.98765 },
          { word: 'it', startMs: 1500, endMs: 1987, confidence: 0.9 },
        ],
      }),
    );
    expect(turn).toMatchObject({
      speaker: 'user',
      text: 'Book it',
      startTime: 1.234,
      endTime: 1.987,
      confidence: 0.9123,
      words: [
        { word: 'Book', startTime: 1.234, endTime: 1.5, confidence: 0.9877 },
        { word: 'it', startTime: 1.5, endTime: 1.987, confidence: 0.9 },
      ],
    });
    expect(isId('turn', turn.id)).toBe(true);
  });

  it('records a DTMF turn as "[DTMF] <digits>"', () => {
    const record = new CallRecord(T0);
    const { message, turn } = record.addUser(userTurn('12', { source: 'dtmf' }));
    expect([message.content, message.source, turn.text]).toEqual(['[DTMF] 12', 'dtmf', '[DTMF] 12']);
  });

  it('records an agent turn from the spoken frame: heard text, times and words', () => {
    const record = new CallRecord(T0);
    const out = record.addAgent(
      frames.spoken('t1', 'We open at nine and close at five.', {
        heardText: 'We open at nine',
        interrupted: true,
        startedAt: 5000,
        playedMs: 900,
        words: [
          { word: 'We', startAt: 5000, endAt: 5150 },
          { word: 'open', startAt: 5150, endAt: 5400 },
        ],
      }),
    );
    expect(out!.message).toMatchObject({ role: 'agent', content: 'We open at nine', durationMs: 900, interrupted: true, source: 'llm', timestamp: '2025-03-14T09:00:05.000Z' });
    expect(out!.turn).toMatchObject({
      speaker: 'agent',
      text: 'We open at nine',
      startTime: 5,
      endTime: 5.9,
      confidence: 1,
      words: [
        { word: 'We', startTime: 5, endTime: 5.15, confidence: 1 },
        { word: 'open', startTime: 5.15, endTime: 5.4, confidence: 1 },
      ],
    });
    expect(record.interruptions).toBe(1);
  });

  it('records no message when nothing was heard, but counts the interruption', () => {
    const record = new CallRecord(T0);
    expect(record.addAgent(frames.spoken('t1', 'Hello there.', { heardText: '  ', interrupted: true, playedMs: 40 }))).toBeNull();
    expect(record.messages).toEqual([]);
    expect(record.turns).toEqual([]);
    expect(record.interruptions).toBe(1);
  });

  it('adds up usage deltas', () => {
    const record = new CallRecord(T0);
    record.addUsage({ llmInputTokens: 100, llmOutputTokens: 20 });
    record.addUsage({ ttsCharacters: 42 });
    record.addUsage({ llmInputTokens: 50, sttAudioMs: 3000 });
    expect(record.usage).toEqual({ llmInputTokens: 150, llmOutputTokens: 20, ttsCharacters: 42, sttAudioMs: 3000 });
  });
});
