import { connectAnswer, mediaStreamUrl } from '../modules/telephony/inbound-answer.js';
import type { StreamTokens } from '../modules/telephony/stream-token.js';
import { PROVIDER_NAMES, simulatedCallSid } from './schemas.js';
import type { ProviderName, SimulateInboundInput } from './schemas.js';

/** The simulator's answer (spec "Telephony debug", simulate-inbound). */
export interface SimulatedInbound {
  provider: ProviderName;
  mediaStreamUrl: string;
  responseBody: string;
}

/**
 * What the platform would answer to `provider`'s inbound-call webhook for this call, with
 * the media gateway at `wss://<host>`: the same builder as the real webhook, so the body
 * is byte for byte what a routed call gets (a Telnyx stream token included, freshly minted).
 * No signature, no database, no side effects.
 */
export function simulateInbound(input: SimulateInboundInput, streamTokens: StreamTokens): SimulatedInbound {
  const ids = { agentId: input.agentId, tenantId: input.tenantId, callSid: input.callSid ?? simulatedCallSid() };
  const call = {
    ...ids,
    from: input.from,
    to: input.to,
    isSipTrunk: input.isSipTrunk,
    // As the real webhook: Telnyx's unsigned stream needs the token (stream-token.ts).
    ...(input.provider === 'telnyx' ? { streamToken: streamTokens.mint({ provider: 'telnyx', ...ids }) } : {}),
  };
  const base = `wss://${input.host}`;
  return {
    provider: PROVIDER_NAMES[input.provider],
    mediaStreamUrl: mediaStreamUrl(input.provider, base, call),
    responseBody: connectAnswer(input.provider, base, call).body,
  };
}
