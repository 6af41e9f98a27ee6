import { OpenAiLlm } from '@vap/voice-pipeline';
import { OpenAiSimulator } from '@vap/voice-pipeline/simulators';
import type { LlmProvider, ProviderEndpoint } from '@vap/voice-pipeline';
import { PermanentJobError } from '../jobs/job-runner.js';

/** Longest wait for the first bytes and between streamed chunks of an analysis reply (ms): nobody is waiting on the line. */
export const ANALYSIS_LLM_TIMEOUT_MS = 60_000;

/** The LLM an analysis runs on, chosen from the agent's `llm` settings. */
export interface AnalysisLlms {
  /** Where OpenAI is reached: the real API (key configured) or a simulator (sandbox). */
  readonly endpoint: ProviderEndpoint;
  /**
   * The adapter and model for an agent's `llm`. `openai` runs on the endpoint; a provider
   * without an adapter yet runs on the simulator in sandbox mode (like calls do) and is a
   * {@link PermanentJobError} with a real key, rather than sending the transcript to a
   * provider the customer did not choose.
   */
  pick(llm: { provider: string; model: string }): { llm: LlmProvider; model: string };
}

/** Analysis LLMs on one OpenAI endpoint (real or simulated); tests pass their own simulator's. No retry wrapper: the job queue retries. */
export function analysisLlms(endpoint: ProviderEndpoint): AnalysisLlms {
  const adapter = new OpenAiLlm({ apiKey: endpoint.apiKey, baseUrl: endpoint.baseUrl, timeoutMs: ANALYSIS_LLM_TIMEOUT_MS });
  return {
    endpoint,
    pick: (llm) => {
      if (llm.provider !== 'openai' && !endpoint.simulated) throw new PermanentJobError(`llm provider ${llm.provider} has no adapter yet; analysis runs on openai or in sandbox mode`);
      return { llm: adapter, model: llm.model };
    },
  };
}

/**
 * The control plane's analysis LLM from its configuration: OpenAI with `OPENAI_API_KEY`
 * (and `OPENAI_BASE_URL`, default the public API), else an OpenAI simulator started here
 * on loopback (sandbox). `close()` stops the simulator.
 */
export async function startAnalysisLlms(openai: { apiKey: string | undefined; baseUrl: string | undefined }): Promise<AnalysisLlms & { describe(): string; close(): Promise<void> }> {
  if (openai.apiKey) {
    const endpoint = { apiKey: openai.apiKey, baseUrl: (openai.baseUrl ?? 'https://api.openai.com').replace(/\/+$/, ''), simulated: false };
    return { ...analysisLlms(endpoint), describe: () => `analysis llm: live (${endpoint.baseUrl})`, close: async () => undefined };
  }
  const sim = await OpenAiSimulator.start();
  const endpoint = { apiKey: sim.apiKey, baseUrl: sim.url, simulated: true };
  return { ...analysisLlms(endpoint), describe: () => `analysis llm: simulated (${sim.url})`, close: () => sim.close() };
}
