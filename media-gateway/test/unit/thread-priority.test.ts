import { describe, expect, it } from 'vitest';
import { PIPELINE_THREAD_NICE_STEPS, pipelineThreadNice } from '../../src/pipeline-threads/thread-priority.js';

describe('pipelineThreadNice', () => {
  it('is 10 steps below the starting thread, within Linux range', () => {
    expect(PIPELINE_THREAD_NICE_STEPS).toBe(10);
    expect(pipelineThreadNice(0)).toBe(10);
    expect(pipelineThreadNice(-5)).toBe(5);
    expect(pipelineThreadNice(-20)).toBe(-10);
    expect(pipelineThreadNice(9)).toBe(19);
    expect(pipelineThreadNice(12)).toBe(19);
  });
});
