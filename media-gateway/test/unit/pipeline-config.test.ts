import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/config.js';

describe('gateway pipeline threads configuration', () => {
  it('runs the pipelines on one thread by default, on the event loop with 0, on up to 16 threads', () => {
    expect(loadGatewayConfig({}).pipelineThreads).toBe(1);
    expect(loadGatewayConfig({ PIPELINE_THREADS: '0' }).pipelineThreads).toBe(0);
    expect(loadGatewayConfig({ PIPELINE_THREADS: '4' }).pipelineThreads).toBe(4);
  });

  it('refuses a count that is not a whole number from 0 to 16, naming the variable', () => {
    for (const bad of ['-1', '17', '1.5', 'two']) expect(() => loadGatewayConfig({ PIPELINE_THREADS: bad })).toThrow(/- PIPELINE_THREADS:/);
  });
});

describe('gateway ElevenLabs socket configuration', () => {
  it('speaks multi-stream-input by default and stream-input when asked', () => {
    expect(loadGatewayConfig({}).providers.elevenlabs.websocket).toBe('multi-stream-input');
    expect(loadGatewayConfig({ ELEVENLABS_WEBSOCKET: 'stream-input' }).providers.elevenlabs.websocket).toBe('stream-input');
  });

  it('refuses another value, naming the variable', () => {
    expect(() => loadGatewayConfig({ ELEVENLABS_WEBSOCKET: 'http' })).toThrow(/- ELEVENLABS_WEBSOCKET:/);
  });
});
