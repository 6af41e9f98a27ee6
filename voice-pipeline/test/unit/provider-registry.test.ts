import { agentConfigSchema } from '@vap/shared';
import { describe, expect, it } from 'vitest';
import { ElevenLabsMultiContextTts } from '../../src/providers/elevenlabs/multi-context-tts.js';
import { ElevenLabsTts } from '../../src/providers/elevenlabs/tts.js';
import { createCallProviders } from '../../src/providers/registry.js';
import type { ProviderEndpoints } from '../../src/providers/registry.js';

const agent = agentConfigSchema.parse({
  name: 'Registry agent',
  persona: { name: 'Ava', role: 'host' },
  voice: { provider: 'elevenlabs', voiceId: 'voice-ava' },
  llm: { provider: 'openai', model: 'gpt-4o-mini' },
  transcription: { provider: 'deepgram' },
  systemPromptTemplate: 'You help.',
});

const endpoint = { apiKey: 'k', baseUrl: 'http://127.0.0.1:9', simulated: true };
const endpoints = (websocket?: 'multi-stream-input' | 'stream-input'): ProviderEndpoints => ({
  deepgram: endpoint,
  openai: endpoint,
  elevenlabs: websocket === undefined ? endpoint : { ...endpoint, websocket },
});

describe('createCallProviders: the ElevenLabs socket', () => {
  it('speaks multi-stream-input (one socket a call) unless the endpoint asks for stream-input', () => {
    expect(createCallProviders(agent, endpoints()).tts).toBeInstanceOf(ElevenLabsMultiContextTts);
    expect(createCallProviders(agent, endpoints('multi-stream-input')).tts).toBeInstanceOf(ElevenLabsMultiContextTts);
    expect(createCallProviders(agent, endpoints('stream-input')).tts).toBeInstanceOf(ElevenLabsTts);
  });
});
