import { describe, expect, it } from 'vitest';
import { latencyViewOf, nearestRank } from '../../src/modules/conversations/latency-view.js';

const turn = (turnId: string, endpointingMs: number, llmFirstTokenMs: number, ttsFirstByteMs: number, overheadMs: number) => ({
  turnId,
  endpointingMs,
  sttMs: 0,
  llmFirstTokenMs,
  ttsFirstByteMs,
  overheadMs,
  totalMs: endpointingMs + llmFirstTokenMs + ttsFirstByteMs + overheadMs,
});

describe('nearestRank', () => {
  it('answers a measured value: the smallest with at least p% at or below it', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(nearestRank(hundred, 50)).toBe(50);
    expect(nearestRank(hundred, 95)).toBe(95);
    expect(nearestRank(hundred, 99)).toBe(99);
    expect(nearestRank([10, 20], 50)).toBe(10);
    expect(nearestRank([10, 20], 95)).toBe(20);
    expect(nearestRank([7], 0)).toBe(7);
    expect(nearestRank([], 50)).toBeNull();
  });
});

describe('latencyViewOf', () => {
  it('keeps the turns in call order while the percentiles use the sorted totals', () => {
    const v = latencyViewOf('conv_1', [turn('a', 500, 0, 0, 0), turn('b', 100, 0, 0, 0), turn('c', 300, 0, 0, 0)]);
    expect(v.turns.map((t) => t.turnId)).toEqual(['a', 'b', 'c']);
    expect(v.summary).toEqual({ turns: 3, p50TotalMs: 300, p95TotalMs: 500, maxTotalMs: 500, slowestStage: 'endpointing' });
  });

  it('names the stage with the most time over the call, not the one slowest in a single turn', () => {
    // TTS has the single worst turn (900) but the LLM more time in all (3 × 400).
    const v = latencyViewOf('conv_1', [turn('a', 10, 400, 900, 5), turn('b', 10, 400, 50, 5), turn('c', 10, 400, 50, 5)]);
    expect(v.summary.slowestStage).toBe('llmFirstToken');
  });

  it('shows llmFirstPhraseMs (0 for breakdowns stored before it) and can name it the slowest stage', () => {
    const v = latencyViewOf('conv_1', [{ ...turn('a', 10, 20, 30, 5), llmFirstPhraseMs: 300, totalMs: 365 }, turn('b', 10, 20, 30, 5)]);
    expect(v.turns.map((t) => t.llmFirstPhraseMs)).toEqual([300, 0]);
    expect(v.summary.slowestStage).toBe('llmFirstPhrase');
  });

  it('gives a tie to the earlier stage in pipeline order', () => {
    expect(latencyViewOf('conv_1', [turn('a', 0, 0, 200, 200)]).summary.slowestStage).toBe('ttsFirstByte');
  });
});
