import type { z } from 'zod';
import type { LlmProvider, SttProvider, VoiceProvider } from './catalogue.js';
import type { sessionUsageSchema } from './bus/subjects.js';

/** Usage a gateway measured during one call (bus `sessionEnded.usage`). */
export type SessionUsage = z.infer<typeof sessionUsageSchema>;

/** Carriers and transports a call can arrive by (the `provider` of `call.prepare`). */
export type TelephonyProvider = 'twilio' | 'telnyx' | 'vonage' | 'sip' | 'webrtc';
export type CallDirection = 'inbound' | 'outbound';

/** USD per one million tokens. */
export interface LlmPrice {
  inputPerMTokUsd: number;
  outputPerMTokUsd: number;
}

/** STT price of a provider: a default per audio minute and per-model exceptions. */
export interface SttPrice {
  perMinuteUsd: number;
  models?: Record<string, number>;
}

/**
 * The one price table, in USD. Public list prices as published by each provider in
 * 2024–2025 (pay-as-you-go, US rates, standard context lengths); they are what the
 * platform charges through, not negotiated rates. It also feeds the AI-models catalogue.
 *
 * - `llm`: per 1M input / output tokens, for every model of `LLM_MODELS`. Huggingface
 *   endpoints are the customer's own, and so are free here, like any unknown model.
 * - `tts`: per 1,000 characters synthesised. ElevenLabs: Scale-plan overage rate;
 *   Google/AWS: WaveNet-Neural2 / Polly neural ($16 per 1M); Azure neural ($15 per 1M).
 * - `stt`: per audio minute, billed per second (as Deepgram and AssemblyAI bill).
 * - `telephony`: per minute and direction, billed per started minute (carriers round
 *   each call up to the minute). US local numbers. `sip` is the customer's own trunk (its
 *   carrier bills them) and `webrtc` never touches a carrier, so both are 0.
 *
 * Anything not listed costs 0: a missing price must never fail a call's record.
 */
export const PRICE_TABLE = {
  currency: 'USD',
  llm: {
    openai: {
      'gpt-4o': { inputPerMTokUsd: 2.5, outputPerMTokUsd: 10 },
      'gpt-4o-mini': { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 },
      'gpt-4-turbo': { inputPerMTokUsd: 10, outputPerMTokUsd: 30 },
      'gpt-3.5-turbo': { inputPerMTokUsd: 0.5, outputPerMTokUsd: 1.5 },
    },
    anthropic: {
      'claude-3-5-sonnet-20241022': { inputPerMTokUsd: 3, outputPerMTokUsd: 15 },
      'claude-3-5-haiku-20241022': { inputPerMTokUsd: 0.8, outputPerMTokUsd: 4 },
      'claude-3-opus-20240229': { inputPerMTokUsd: 15, outputPerMTokUsd: 75 },
      'claude-3-sonnet-20240229': { inputPerMTokUsd: 3, outputPerMTokUsd: 15 },
      'claude-3-haiku-20240307': { inputPerMTokUsd: 0.25, outputPerMTokUsd: 1.25 },
    },
    google: {
      'gemini-1.5-pro': { inputPerMTokUsd: 1.25, outputPerMTokUsd: 5 },
      'gemini-1.5-flash': { inputPerMTokUsd: 0.075, outputPerMTokUsd: 0.3 },
      'gemini-1.0-pro': { inputPerMTokUsd: 0.5, outputPerMTokUsd: 1.5 },
    },
    cohere: {
      'command-r-plus': { inputPerMTokUsd: 2.5, outputPerMTokUsd: 10 },
      'command-r': { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 },
    },
  } satisfies Record<Exclude<LlmProvider, 'huggingface'>, Record<string, LlmPrice>>,
  tts: {
    elevenlabs: { per1kCharsUsd: 0.18 },
    google: { per1kCharsUsd: 0.016 },
    aws: { per1kCharsUsd: 0.016 },
    azure: { per1kCharsUsd: 0.015 },
  } satisfies Record<VoiceProvider, { per1kCharsUsd: number }>,
  stt: {
    deepgram: { perMinuteUsd: 0.0043, models: { 'nova-2': 0.0043, 'nova-2-medical': 0.0043, enhanced: 0.0145, base: 0.0125 } },
    assemblyai: { perMinuteUsd: 0.37 / 60, models: { best: 0.37 / 60, nano: 0.12 / 60 } },
    google: { perMinuteUsd: 0.016, models: { latest_long: 0.016, latest_short: 0.016, medical_conversation: 0.078 } },
    aws: { perMinuteUsd: 0.024, models: { standard: 0.024, medical: 0.075 } },
    azure: { perMinuteUsd: 1 / 60, models: { standard: 1 / 60, custom: 1.2 / 60 } },
  } satisfies Record<SttProvider, SttPrice>,
  telephony: {
    twilio: { inboundPerMinuteUsd: 0.0085, outboundPerMinuteUsd: 0.014 },
    telnyx: { inboundPerMinuteUsd: 0.0035, outboundPerMinuteUsd: 0.005 },
    vonage: { inboundPerMinuteUsd: 0.004, outboundPerMinuteUsd: 0.0139 },
    sip: { inboundPerMinuteUsd: 0, outboundPerMinuteUsd: 0 },
    webrtc: { inboundPerMinuteUsd: 0, outboundPerMinuteUsd: 0 },
  } satisfies Record<TelephonyProvider, { inboundPerMinuteUsd: number; outboundPerMinuteUsd: number }>,
} as const;

/** A priced call: usage and cost per component (spec "Costs" breakdown); all in USD. */
export interface CallPrice {
  currency: 'USD';
  /** Sum of the four rounded costs. */
  total: number;
  llm: { provider: string; model: string; inputTokens: number; outputTokens: number; cost: number };
  tts: { provider: string; characters: number; cost: number };
  stt: { provider: string; audioSeconds: number; cost: number };
  /** `minutes` are billed minutes: every started minute counts. */
  telephony: { provider: string; minutes: number; cost: number };
}

const own = <T extends object>(table: T, key: string): T[keyof T] | undefined => (Object.hasOwn(table, key) ? table[key as keyof T] : undefined);

/** Price per 1M tokens of a model, or undefined when the table has none (priced at 0). */
export function llmPrice(provider: string, model: string): LlmPrice | undefined {
  const models = own(PRICE_TABLE.llm, provider) as Record<string, LlmPrice> | undefined;
  return models ? own(models, model) : undefined;
}

/** USD per 1,000 characters, or undefined when the provider is not in the table. */
export function ttsPricePer1kChars(provider: string): number | undefined {
  return own(PRICE_TABLE.tts, provider)?.per1kCharsUsd;
}

/** USD per audio minute of a provider's model (its default when the model has no price of its own). */
export function sttPricePerMinute(provider: string, model?: string): number | undefined {
  const p = own(PRICE_TABLE.stt, provider) as SttPrice | undefined;
  if (!p) return undefined;
  return (model !== undefined && p.models ? own(p.models, model) : undefined) ?? p.perMinuteUsd;
}

/** USD per billed minute for a carrier and direction, or undefined when unknown. */
export function telephonyPricePerMinute(provider: string, direction: CallDirection): number | undefined {
  const p = own(PRICE_TABLE.telephony, provider);
  if (!p) return undefined;
  return direction === 'inbound' ? p.inboundPerMinuteUsd : p.outboundPerMinuteUsd;
}

/** Rounds to 6 decimals (micro-dollars), the precision costs are stored with. */
export function roundUsd(value: number): number {
  return Math.round((value + Number.EPSILON) * 1e6) / 1e6;
}

/**
 * Prices one call from the usage its gateway measured. Pure: no I/O.
 * - LLM: tokens × price per 1M; STT: audio seconds / 60 × price per minute (per second);
 * - TTS: characters / 1000 × price per 1,000 characters;
 * - telephony: `ceil(seconds / 60)` billed minutes × price per minute of the direction.
 * Each cost is rounded to 6 decimals; `total` is the sum of the rounded costs. A price
 * the table lacks counts as 0 (see {@link unpricedUsage} to report it).
 * @param opts.sttModel the agent's transcription model, when its price differs by model.
 */
export function priceCall(usage: SessionUsage, direction: CallDirection, opts: { sttModel?: string } = {}): CallPrice {
  const lp = llmPrice(usage.llm.provider, usage.llm.model);
  const llmCost = roundUsd(lp ? (usage.llm.inputTokens * lp.inputPerMTokUsd + usage.llm.outputTokens * lp.outputPerMTokUsd) / 1_000_000 : 0);
  const ttsCost = roundUsd(((ttsPricePer1kChars(usage.tts.provider) ?? 0) * usage.tts.characters) / 1000);
  const sttCost = roundUsd(((sttPricePerMinute(usage.stt.provider, opts.sttModel) ?? 0) * usage.stt.audioSeconds) / 60);
  const minutes = Math.ceil(usage.telephony.seconds / 60);
  const telephonyCost = roundUsd((telephonyPricePerMinute(usage.telephony.provider, direction) ?? 0) * minutes);
  return {
    currency: 'USD',
    total: roundUsd(llmCost + ttsCost + sttCost + telephonyCost),
    llm: { provider: usage.llm.provider, model: usage.llm.model, inputTokens: usage.llm.inputTokens, outputTokens: usage.llm.outputTokens, cost: llmCost },
    tts: { provider: usage.tts.provider, characters: usage.tts.characters, cost: ttsCost },
    stt: { provider: usage.stt.provider, audioSeconds: usage.stt.audioSeconds, cost: sttCost },
    telephony: { provider: usage.telephony.provider, minutes, cost: telephonyCost },
  };
}

/**
 * The parts of a usage record the table has no price for (`llm:openai/gpt-5`), so the
 * caller can log them. Huggingface models are the customer's own and not listed.
 */
export function unpricedUsage(usage: SessionUsage, direction: CallDirection): string[] {
  const out: string[] = [];
  if (usage.llm.provider !== 'huggingface' && !llmPrice(usage.llm.provider, usage.llm.model)) out.push(`llm:${usage.llm.provider}/${usage.llm.model}`);
  if (ttsPricePer1kChars(usage.tts.provider) === undefined) out.push(`tts:${usage.tts.provider}`);
  if (sttPricePerMinute(usage.stt.provider) === undefined) out.push(`stt:${usage.stt.provider}`);
  if (telephonyPricePerMinute(usage.telephony.provider, direction) === undefined) out.push(`telephony:${usage.telephony.provider}`);
  return out;
}
