import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { isId } from '@vap/shared';
import type { InboundProvider } from '../modules/telephony/inbound-answer.js';

/** The spec's provider names, as the debug endpoints return them; accepted in any case (`twilio`, `TWILIO`…). */
export const PROVIDER_NAMES = { twilio: 'Twilio', vonage: 'Vonage', telnyx: 'Telnyx' } as const satisfies Record<InboundProvider, string>;
export type ProviderName = (typeof PROVIDER_NAMES)[InboundProvider];

const providerSchema = z
  .string()
  .refine((v) => Object.hasOwn(PROVIDER_NAMES, v.toLowerCase()), 'must be one of: Twilio, Vonage, Telnyx (any case)')
  .transform((v) => v.toLowerCase() as InboundProvider);

// A host name or address with an optional port; no scheme, path or credentials.
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const party = z.string().trim().min(1, 'must not be empty').max(256, 'must be at most 256 characters');

/** Body of `simulate-inbound` (spec "Telephony debug"); `provider` comes out lower-case. */
export const simulateInboundBody = z.strictObject({
  provider: providerSchema,
  agentId: z.string().refine((v) => isId('agt', v), 'must be an agent id (agt_…)'),
  tenantId: z.string().refine((v) => isId('ten', v), 'must be a tenant id (ten_…)'),
  from: party,
  to: party,
  host: z.string().max(260).regex(HOST, 'must be a host with an optional port, such as gw.example.com or gw.example.com:8443 (no scheme or path)'),
  callSid: z.string().trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters').optional(),
  isSipTrunk: z.boolean().default(false),
});

export type SimulateInboundInput = z.output<typeof simulateInboundBody>;

/** Response of `simulate-inbound`. */
export const simulateInboundResponse = z.object({
  provider: z.enum(['Twilio', 'Vonage', 'Telnyx']),
  mediaStreamUrl: z.string(),
  responseBody: z.string().describe('TwiML (Twilio), TeXML (Telnyx) or the NCCO as a JSON string (Vonage)'),
});

/** Path parameters of the call inspector. */
export const callSidParams = z.strictObject({ callSid: z.string().min(1).max(200) });

const inspectedConversation = z.object({
  id: z.string(),
  tenantId: z.string(),
  agentId: z.string(),
  channel: z.string(),
  status: z.string(),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  durationSeconds: z.number().int().nullable(),
  callerIdentifier: z.string().nullable(),
  outcome: z.string().nullable(),
  costTotal: z.number().nullable(),
  messageCount: z.number().int(),
});

const carrierEvent = z.object({
  provider: z.enum(['twilio', 'telnyx', 'vonage']),
  status: z.string().describe("the carrier's own status value"),
  detail: z.string().nullable(),
  durationSeconds: z.number().int().nullable(),
  occurredAt: z.string().describe("the carrier's event time, or when it was received when the carrier sends none"),
});

/**
 * Inspector match; `outboundCall` is always null: outbound calls are not stored yet (docs/api.md).
 * `conversation` is null for a call the carriers reported but that never got one (ended while ringing).
 */
export const inspectedCallSchema = z.object({
  callSid: z.string(),
  conversation: inspectedConversation.nullable(),
  outboundCall: z.null(),
  carrierEvents: z.array(carrierEvent).describe('call-status callbacks of the carriers, oldest first'),
});
/** Inspector no-match body, the spec's shape (not a problem document). */
export const callNotFoundSchema = z.object({ callSid: z.string(), message: z.string() });

/** `SIMULATED-<uuid>`, the spec's default call id of a simulated call. */
export function simulatedCallSid(): string {
  return `SIMULATED-${randomUUID()}`;
}

/** Body of `validate-connection`: `provider` comes out lower-case, `countryCode` upper-case (default `US`). */
export const validateConnectionBody = z.strictObject({
  provider: providerSchema,
  countryCode: z
    .string()
    .trim()
    .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code such as US or GB')
    .transform((v) => v.toUpperCase())
    .default('US'),
});

/** Response of `validate-connection`: always 200; `success` and `detail` say how the probe went. */
export const validateConnectionResponse = z.object({
  provider: z.enum(['Twilio', 'Vonage', 'Telnyx']),
  success: z.boolean(),
  probeCountry: z.string(),
  detail: z.string().describe('What happened: authenticated, missing configuration (the variables to set), Unauthorized (401), Forbidden (403), HTTP timeout, or the carrier status'),
});

/** Query of `repair-provider-sids`: `dryRun` (`true`/`false`, default `true`: nothing is written unless asked). */
export const repairProviderSidsQuery = z.object({
  dryRun: z.enum(['true', 'false'], { error: 'must be true or false' }).default('true').transform((v) => v === 'true'),
});

/** Summary of `repair-provider-sids` (spec "Telephony debug"). */
export const repairSummarySchema = z.object({
  dryRun: z.boolean(),
  scanned: z.number().int(),
  repaired: z.number().int().describe('Numbers whose provider id was rewritten (in a dry run: would be rewritten)'),
  alreadyCorrect: z.number().int(),
  missingOnProvider: z.number().int(),
  errors: z.number().int(),
  items: z.array(
    z.object({
      id: z.string(),
      phoneNumber: z.string(),
      storedProviderSid: z.string().nullable(),
      canonicalProviderSid: z.string().nullable(),
      action: z.string().describe('`repaired`, `already-correct`, `missing-on-telnyx` or `error: <text>`'),
    }),
  ),
});
