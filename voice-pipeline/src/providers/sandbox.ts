import { DeepgramSimulator } from './deepgram/simulator.js';
import { ElevenLabsSimulator } from './elevenlabs/simulator.js';
import { OpenAiSimulator } from './openai/simulator.js';
import type { ElevenLabsWebSocket } from './elevenlabs/wire.js';
import type { ProviderEndpoint, ProviderEndpoints } from './registry.js';

/** Keys and base URLs for real providers; a missing key means "use the simulator". */
export interface ProviderKeys {
  deepgram?: { apiKey?: string; baseUrl?: string };
  openai?: { apiKey?: string; baseUrl?: string };
  /** `websocket`: the TTS's text-in socket, live or simulated (absent: `multi-stream-input`). */
  elevenlabs?: { apiKey?: string; baseUrl?: string; websocket?: ElevenLabsWebSocket };
}

export interface ProviderRuntime {
  endpoints: ProviderEndpoints;
  /** The running simulators (sandbox providers), to script or fault them. */
  simulators: { deepgram?: DeepgramSimulator; openai?: OpenAiSimulator; elevenlabs?: ElevenLabsSimulator };
  /** One line per provider: `deepgram: live (https://api.deepgram.com)` or `deepgram: simulated (http://127.0.0.1:…)`. */
  describe(): string[];
  close(): Promise<void>;
}

const DEFAULT_BASE = { deepgram: 'https://api.deepgram.com', openai: 'https://api.openai.com', elevenlabs: 'https://api.elevenlabs.io' } as const;

/**
 * Resolves each provider to its real API (key configured) or to a simulator started here
 * on loopback (sandbox). Same adapters either way: only the base URL differs.
 */
export async function startProviders(keys: ProviderKeys): Promise<ProviderRuntime> {
  const simulators: ProviderRuntime['simulators'] = {};
  const live = (name: keyof typeof DEFAULT_BASE): ProviderEndpoint | null => {
    const k = keys[name];
    return k?.apiKey ? { apiKey: k.apiKey, baseUrl: (k.baseUrl ?? DEFAULT_BASE[name]).replace(/\/+$/, ''), simulated: false } : null;
  };
  const deepgram = live('deepgram') ?? (await (async () => {
    const sim = await DeepgramSimulator.start();
    simulators.deepgram = sim;
    return { apiKey: sim.apiKey, baseUrl: sim.url, simulated: true };
  })());
  const openai = live('openai') ?? (await (async () => {
    const sim = await OpenAiSimulator.start();
    simulators.openai = sim;
    return { apiKey: sim.apiKey, baseUrl: sim.url, simulated: true };
  })());
  const elevenlabs = live('elevenlabs') ?? (await (async () => {
    const sim = await ElevenLabsSimulator.start();
    simulators.elevenlabs = sim;
    return { apiKey: sim.apiKey, baseUrl: sim.url, simulated: true };
  })());
  const websocket = keys.elevenlabs?.websocket;
  const endpoints: ProviderEndpoints = { deepgram, openai, elevenlabs: websocket === undefined ? elevenlabs : { ...elevenlabs, websocket } };
  return {
    endpoints,
    simulators,
    describe: () => Object.entries(endpoints).map(([name, ep]) => `${name}: ${ep.simulated ? 'simulated' : 'live'} (${ep.baseUrl})`),
    close: async () => {
      await Promise.all([simulators.deepgram?.close(), simulators.openai?.close(), simulators.elevenlabs?.close()]);
    },
  };
}
