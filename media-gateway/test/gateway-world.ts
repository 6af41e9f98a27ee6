import type { z } from 'zod';
import { agentConfigSchema, newId } from '@vap/shared';
import type { AgentConfig, Bus, BusSubscription, Payload } from '@vap/shared';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import type { MediaGateway } from '../src/gateway.js';
import { TwilioCallerSimulator, twilioSid } from '../src/simulators/twilio-caller.js';
import { TWILIO_MEDIA_STREAM_PATH } from '../src/twilio/media-stream-server.js';

/**
 * The world the gateway integration tests call into: a sandbox agent, a bus responder
 * standing in for the control plane, and a simulated Twilio caller dialing a real gateway.
 */

/** The Harbour Bistro host on the sandbox providers (elevenlabs, openai, deepgram, VAD endpointing). */
export function bistroAgent(overrides: Partial<z.input<typeof agentConfigSchema>> = {}): AgentConfig {
  return agentConfigSchema.parse({
    name: 'Bistro agent',
    persona: { name: 'Ava', role: 'host at Harbour Bistro' },
    voice: { provider: 'elevenlabs', voiceId: 'voice-ava' },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    transcription: { provider: 'deepgram', language: 'en-US' },
    systemPromptTemplate: 'You take bookings for Harbour Bistro.',
    firstMessage: 'Hello! Thanks for calling Harbour Bistro.',
    endpointing: { provider: 'vad', silenceDurationMs: 500, utteranceEndMs: 1000 },
    ...overrides,
  });
}

/**
 * Answers `callPrepare` as the control plane would for the agents in `agents` (looked up when
 * the call comes in): a conversation per call id, kept in `conversations` by callSid. Answers
 * `callEnd` as stored, keeping each end record in `ended` (by conversation id) and giving it
 * to `onEnded` first.
 */
export function standInControlPlane(
  bus: Bus,
  agents: ReadonlyMap<string, AgentConfig>,
  onEnded?: (record: Payload<'sessionEnded'>) => void,
): { conversations: Map<string, string>; ended: Map<string, Payload<'sessionEnded'>>; subscription: BusSubscription } {
  const conversations = new Map<string, string>();
  const ended = new Map<string, Payload<'sessionEnded'>>();
  const prepare = bus.respond('callPrepare', async (req) => {
    const config = agents.get(req.agentId);
    if (!config) return { ok: false, code: 'agent-not-found', message: 'unknown agent' };
    // As the control plane: the same call id gets the same conversation.
    const conversationId = conversations.get(req.callSid) ?? newId('conv');
    conversations.set(req.callSid, conversationId);
    return { ok: true, conversationId, startedAt: new Date().toISOString(), agent: { id: req.agentId, tenantId: req.tenantId, version: 1, config, llmApiKey: null }, caller: { phoneNumber: req.from, country: 'US' } };
  });
  const end = bus.respond('callEnd', async (record) => {
    onEnded?.(record);
    ended.set(record.conversationId, record);
    return { ok: true };
  });
  return { conversations, ended, subscription: { close: async () => void (await Promise.all([prepare.close(), end.close()])) } };
}

/**
 * Dials the gateway's Twilio media stream as a new call whose caller will say `script` (the
 * deepgram simulator's transcripts for it). `parameters` go with agentId and tenantId as the
 * stream's custom parameters. `connectedAt` is performance.now() just before connecting.
 */
export async function dial(
  gw: MediaGateway,
  providers: ProviderRuntime,
  agentId: string,
  tenantId: string,
  script: string[],
  parameters: Record<string, string> = {},
): Promise<{ call: TwilioCallerSimulator; connectedAt: number }> {
  const callSid = twilioSid('CA');
  providers.simulators.deepgram!.setScript(callSid, script);
  const connectedAt = performance.now();
  const call = await TwilioCallerSimulator.connect(gw.url.replace(/^http/, 'ws') + TWILIO_MEDIA_STREAM_PATH, { callSid, customParameters: { agentId, tenantId, ...parameters } });
  return { call, connectedAt };
}
