import { unstorableTextReason } from '../../db/storable-text.js';
import { apologyAnswer, connectAnswer } from './inbound-answer.js';
import type { InboundAnswer, InboundProvider } from './inbound-answer.js';
import type { InboundRoute } from './phone-number-repository.js';
import type { StreamTokens } from './stream-token.js';

/** Why a call was not connected (logged; the caller only hears the apology). */
export type InboundRefusal = 'missing-parameters' | 'unknown-number' | 'no-agent' | 'agent-inactive' | 'gateways-draining' | 'error';

/** The decision for one inbound call: the answer to send, and what it routed to. */
export type InboundDecision =
  | { outcome: 'connected'; answer: InboundAnswer; numberId: string; agentId: string; tenantId: string }
  | { outcome: InboundRefusal; answer: InboundAnswer; numberId?: string; agentId?: string; error?: unknown };

/**
 * Logs a routing decision the same way for every carrier: `info` when connected, `error` with
 * the cause on a failure, `warn` with the reason for the other refusals. `log` is bound to the
 * call (`callSid`, `provider`); phone numbers are never logged.
 */
export function logInboundDecision(log: Record<'info' | 'warn' | 'error', (fields: Record<string, unknown>, msg: string) => void>, decision: InboundDecision): void {
  if (decision.outcome === 'connected') {
    log.info({ numberId: decision.numberId, agentId: decision.agentId, tenantId: decision.tenantId }, 'inbound call routed to agent');
  } else if (decision.outcome === 'error') {
    log.error({ err: decision.error, reason: decision.outcome }, 'inbound call answered with apology');
  } else {
    log.warn({ reason: decision.outcome, numberId: decision.numberId, agentId: decision.agentId }, 'inbound call answered with apology');
  }
}

/** What the webhook knows about the call from the carrier's parameters. */
export interface InboundRequest {
  callSid: string | undefined;
  from: string | undefined;
  to: string | undefined;
}

/**
 * Routes an inbound call: the called number → its assigned agent → that agent's tenant,
 * and answers with a stream to the media gateway; anything else, including a failing
 * database, becomes the apology. So does a call while every media gateway drains (shuts
 * down): its stream would be refused, and the caller would hear nothing before the carrier
 * hangs up. Never throws: a carrier that gets an error instead of TwiML plays its own
 * failure message or tries the fallback URL.
 */
export class InboundCallRouter {
  private readonly numbers: { findInboundRoute(provider: InboundProvider, phoneNumber: string): Promise<InboundRoute | undefined> };
  private readonly mediaGatewayPublicUrl: string;
  private readonly streamTokens: StreamTokens | undefined;
  private readonly gateways: { allDraining(): Promise<boolean> };

  /**
   * `streamTokens`: a carrier whose streams arrive unsigned (Telnyx) gets a token in its answer, which call.prepare checks.
   * `gateways`: whether every media gateway drains (GatewayIntake, from their heartbeats).
   */
  constructor(deps: { numbers: InboundCallRouter['numbers']; mediaGatewayPublicUrl: string; streamTokens?: StreamTokens; gateways: InboundCallRouter['gateways'] }) {
    this.numbers = deps.numbers;
    this.mediaGatewayPublicUrl = deps.mediaGatewayPublicUrl;
    this.streamTokens = deps.streamTokens;
    this.gateways = deps.gateways;
  }

  async answer(provider: InboundProvider, call: InboundRequest): Promise<InboundDecision> {
    const apology = apologyAnswer(provider);
    if (!call.to || !call.callSid) return { outcome: 'missing-parameters', answer: apology };
    // No number of ours holds a NUL or an unpaired surrogate (and Postgres could not look one up).
    if (unstorableTextReason(call.to) !== null) return { outcome: 'unknown-number', answer: apology };
    let route: InboundRoute | undefined;
    let allDraining: boolean;
    try {
      // Both at once: the carrier waits on this answer before the caller hears anything.
      [route, allDraining] = await Promise.all([this.numbers.findInboundRoute(provider, call.to), this.gateways.allDraining()]);
    } catch (error) {
      return { outcome: 'error', answer: apology, error };
    }
    if (!route) return { outcome: 'unknown-number', answer: apology };
    const { agent, numberId } = route;
    if (!agent) return { outcome: 'no-agent', answer: apology, numberId };
    if (agent.status !== 'active') return { outcome: 'agent-inactive', answer: apology, numberId, agentId: agent.id };
    if (allDraining) return { outcome: 'gateways-draining', answer: apology, numberId, agentId: agent.id };
    const ids = { agentId: agent.id, tenantId: agent.tenantId, callSid: call.callSid };
    const answer = connectAnswer(provider, this.mediaGatewayPublicUrl, {
      ...ids,
      // Twilio sends `anonymous` for a withheld number; an absent From is passed on empty.
      from: call.from ?? '',
      to: call.to,
      // Calls over a SIP trunk will set this once trunks exist (spec "SIP trunk"; no issue yet).
      isSipTrunk: false,
      ...(this.streamTokens ? { streamToken: this.streamTokens.mint({ provider, ...ids }) } : {}),
    });
    return { outcome: 'connected', answer, numberId, agentId: agent.id, tenantId: agent.tenantId };
  }
}
