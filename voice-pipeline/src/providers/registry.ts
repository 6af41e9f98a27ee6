import type { AgentConfig } from '@vap/shared';
import { DeepgramStt } from './deepgram/stt.js';
import { ElevenLabsMultiContextTts } from './elevenlabs/multi-context-tts.js';
import { ElevenLabsTts } from './elevenlabs/tts.js';
import type { ElevenLabsWebSocket } from './elevenlabs/wire.js';
import { OpenAiLlm } from './openai/llm.js';
import { ProviderError } from './provider-error.js';
import { withLlmRetry } from './retry.js';
import type { LlmProvider, ProviderConnection, SttProvider, TtsProvider } from './types.js';

/** Where one provider is reached; `simulated` when it is the built-in sandbox simulator. */
export interface ProviderEndpoint extends ProviderConnection {
  simulated: boolean;
}

/** The providers with adapters today, as configured for this process. */
export interface ProviderEndpoints {
  deepgram: ProviderEndpoint;
  openai: ProviderEndpoint;
  /** `websocket`: which text-in socket the TTS uses; absent: `multi-stream-input`. */
  elevenlabs: ProviderEndpoint & { websocket?: ElevenLabsWebSocket };
}

export interface CallProviders {
  stt: SttProvider;
  llm: LlmProvider;
  tts: TtsProvider;
  /** Capabilities served by a simulator because the agent's provider has no adapter yet. */
  substituted: string[];
}

/** Where each of one call's providers is reached, and which capabilities a simulator stands in for. */
export interface CallEndpoints {
  stt: ProviderEndpoint;
  llm: ProviderEndpoint;
  tts: ProviderEndpoint;
  /** Capabilities served by a simulator because the agent's provider has no adapter yet. */
  substituted: string[];
}

/**
 * Where the three providers of one call are reached, from the agent's configuration.
 * Providers without an adapter yet (the spec lists more than Deepgram, OpenAI and
 * ElevenLabs) fall back to the simulator of that capability when it runs in sandbox mode,
 * so any agent can be tried; with real keys configured they fail clearly
 * (`provider_unsupported`, thrown) instead of sending the call to a provider the customer
 * did not choose. Builds no client: the gateway decides with it before a call's pipeline
 * starts, wherever that pipeline runs.
 */
export function resolveCallEndpoints(agent: AgentConfig, endpoints: ProviderEndpoints): CallEndpoints {
  const substituted: string[] = [];
  const pick = <K extends keyof ProviderEndpoints>(capability: string, configured: string, key: K): ProviderEndpoint => {
    const ep = endpoints[key];
    if (configured === key) return ep;
    if (!ep.simulated) {
      throw new ProviderError({ provider: configured, capability: capability as 'stt', code: 'provider_unsupported', message: `${capability} provider ${configured} is not supported yet`, retryable: false });
    }
    substituted.push(`${capability}:${configured}`);
    return ep;
  };
  return { stt: pick('stt', agent.transcription.provider, 'deepgram'), llm: pick('llm', agent.llm.provider, 'openai'), tts: pick('tts', agent.voice.provider, 'elevenlabs'), substituted };
}

/** The three providers of one call, on the endpoints {@link resolveCallEndpoints} picks (and with its errors). */
export function createCallProviders(agent: AgentConfig, endpoints: ProviderEndpoints, opts: { llmTimeoutMs?: number; ttsFirstByteTimeoutMs?: number } = {}): CallProviders {
  const { stt: dg, llm: oa, tts: el, substituted } = resolveCallEndpoints(agent, endpoints);
  return {
    stt: new DeepgramStt({ apiKey: dg.apiKey, baseUrl: dg.baseUrl }),
    llm: withLlmRetry(new OpenAiLlm({ apiKey: oa.apiKey, baseUrl: oa.baseUrl, timeoutMs: opts.llmTimeoutMs }), { attempts: 3, baseDelayMs: 200 }),
    tts:
      endpoints.elevenlabs.websocket === 'stream-input'
        ? new ElevenLabsTts({ apiKey: el.apiKey, baseUrl: el.baseUrl, firstByteTimeoutMs: opts.ttsFirstByteTimeoutMs })
        : new ElevenLabsMultiContextTts({ apiKey: el.apiKey, baseUrl: el.baseUrl, firstByteTimeoutMs: opts.ttsFirstByteTimeoutMs }),
    substituted,
  };
}
