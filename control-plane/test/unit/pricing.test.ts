import { describe, expect, it } from 'vitest';
import { LLM_MODELS, PRICE_TABLE, STT_MODELS, llmPrice, priceCall, roundUsd, sttPricePerMinute, unpricedUsage } from '@vap/shared';
import type { SessionUsage } from '@vap/shared';

function usage(overrides: Partial<SessionUsage> = {}): SessionUsage {
  return {
    llm: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 12_000, outputTokens: 3_000 },
    tts: { provider: 'elevenlabs', characters: 1_500 },
    stt: { provider: 'deepgram', audioSeconds: 95 },
    telephony: { provider: 'twilio', seconds: 95 },
    ...overrides,
  };
}

describe('priceCall', () => {
  it('prices each component from the table and sums the rounded costs', () => {
    // By hand: LLM 12,000 × 0.15/1M + 3,000 × 0.60/1M = 0.0018 + 0.0018 = 0.0036
    //          TTS 1,500 chars × 0.18/1k = 0.27
    //          STT 95 s × 0.0043/60 = 0.00680833… → 0.006808
    //          telephony 95 s → 2 started minutes × 0.0085 (Twilio inbound) = 0.017
    //          total 0.0036 + 0.27 + 0.006808 + 0.017 = 0.297408
    expect(priceCall(usage(), 'inbound')).toEqual({
      currency: 'USD',
      total: 0.297408,
      llm: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 12_000, outputTokens: 3_000, cost: 0.0036 },
      tts: { provider: 'elevenlabs', characters: 1_500, cost: 0.27 },
      stt: { provider: 'deepgram', audioSeconds: 95, cost: 0.006808 },
      telephony: { provider: 'twilio', minutes: 2, cost: 0.017 },
    });
  });

  it('bills telephony per started minute and by direction', () => {
    const at = (seconds: number, direction: 'inbound' | 'outbound') => priceCall(usage({ telephony: { provider: 'twilio', seconds } }), direction).telephony;
    expect(at(0, 'inbound')).toEqual({ provider: 'twilio', minutes: 0, cost: 0 });
    expect(at(1, 'inbound')).toEqual({ provider: 'twilio', minutes: 1, cost: 0.0085 });
    expect(at(60, 'inbound')).toEqual({ provider: 'twilio', minutes: 1, cost: 0.0085 });
    expect(at(60.5, 'outbound')).toEqual({ provider: 'twilio', minutes: 2, cost: 0.028 });
    expect(priceCall(usage({ telephony: { provider: 'webrtc', seconds: 600 } }), 'inbound').telephony).toEqual({ provider: 'webrtc', minutes: 10, cost: 0 });
  });

  it('prices Claude and per-model STT: 3.5 Sonnet, AssemblyAI nano, AWS medical', () => {
    // LLM 100,000 × 3/1M + 20,000 × 15/1M = 0.3 + 0.3 = 0.6
    const claude = priceCall(usage({ llm: { provider: 'anthropic', model: 'claude-3-5-sonnet-20241022', inputTokens: 100_000, outputTokens: 20_000 } }), 'inbound');
    expect(claude.llm.cost).toBe(0.6);
    // nano: 0.12 $/h = 0.002 $/min; 90 s → 0.003
    expect(priceCall(usage({ stt: { provider: 'assemblyai', audioSeconds: 90 } }), 'inbound', { sttModel: 'nano' }).stt.cost).toBe(0.003);
    // medical: 0.075 $/min; 30 s → 0.0375; default model of aws (standard 0.024) → 0.012
    expect(priceCall(usage({ stt: { provider: 'aws', audioSeconds: 30 } }), 'inbound', { sttModel: 'medical' }).stt.cost).toBe(0.0375);
    expect(priceCall(usage({ stt: { provider: 'aws', audioSeconds: 30 } }), 'inbound').stt.cost).toBe(0.012);
    // A model the provider does not list falls back to the provider's default.
    expect(sttPricePerMinute('deepgram', 'nova-9')).toBe(0.0043);
  });

  it('prices what the table lacks at 0, and says so', () => {
    const odd = usage({
      llm: { provider: 'openai', model: 'gpt-9', inputTokens: 1_000, outputTokens: 1_000 },
      tts: { provider: 'simulator', characters: 100 },
      stt: { provider: 'simulator', audioSeconds: 10 },
      telephony: { provider: 'pigeon', seconds: 10 },
    });
    const price = priceCall(odd, 'outbound');
    expect([price.total, price.llm.cost, price.tts.cost, price.stt.cost, price.telephony.cost]).toEqual([0, 0, 0, 0, 0]);
    expect(price.telephony.minutes).toBe(1);
    expect(unpricedUsage(odd, 'outbound')).toEqual(['llm:openai/gpt-9', 'tts:simulator', 'stt:simulator', 'telephony:pigeon']);
    const hf = usage({ llm: { provider: 'huggingface', model: 'my-org/llama', inputTokens: 5_000, outputTokens: 5_000 } });
    expect(priceCall(hf, 'inbound').llm.cost).toBe(0);
    expect(unpricedUsage(hf, 'inbound')).toEqual([]);
    // Inherited object keys are not prices.
    expect(llmPrice('openai', 'constructor')).toBeUndefined();
  });

  it('has an LLM price for every catalogue model and an STT price for every catalogue provider', () => {
    for (const [provider, models] of Object.entries(LLM_MODELS)) {
      for (const model of models) expect(llmPrice(provider, model), `${provider}/${model}`).toBeDefined();
    }
    for (const [provider, models] of Object.entries(STT_MODELS)) {
      for (const model of models) expect(sttPricePerMinute(provider, model), `${provider}/${model}`).toBeGreaterThan(0);
    }
    expect(PRICE_TABLE.currency).toBe('USD');
  });

  it('rounds to micro-dollars without binary noise', () => {
    expect(roundUsd(0.1 + 0.2)).toBe(0.3);
    expect(roundUsd(0.0000005)).toBe(0.000001);
    expect(roundUsd(1.23456749)).toBe(1.234567);
  });
});
