import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration of background jobs and the analysis LLM', () => {
  it('defaults to 4 jobs at once, a 2 s poll, and no OpenAI key (the control plane starts a simulator)', () => {
    const c = loadConfig({});
    expect(c.jobs).toEqual({ concurrency: 4, pollIntervalMs: 2000 });
    expect(c.openai).toEqual({ apiKey: undefined, baseUrl: undefined });
  });

  it('reads the OpenAI key and base URL the media gateway reads too', () => {
    expect(loadConfig({ OPENAI_API_KEY: 'sk-live', OPENAI_BASE_URL: 'http://vllm.internal:8000', JOBS_CONCURRENCY: '16', JOBS_POLL_INTERVAL_MS: '500' })).toMatchObject({
      openai: { apiKey: 'sk-live', baseUrl: 'http://vllm.internal:8000' },
      jobs: { concurrency: 16, pollIntervalMs: 500 },
    });
  });

  it('names bad values', () => {
    let err: unknown;
    try {
      loadConfig({ OPENAI_BASE_URL: 'ftp://x', JOBS_CONCURRENCY: '0', JOBS_POLL_INTERVAL_MS: 'soon' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['JOBS_CONCURRENCY', 'JOBS_POLL_INTERVAL_MS', 'OPENAI_BASE_URL']);
  });
});
