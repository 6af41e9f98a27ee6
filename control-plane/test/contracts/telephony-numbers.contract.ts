/**
 * The number-management contract (STYLE.md §4): every TelephonyProvider adapter, run
 * against its carrier simulator, must search, buy, release, price and look up numbers, put
 * the right things on the wire, and fail in the contract's terms. A carrier's integration
 * test calls `telephonyNumbersContract(factory)` and adds its own wire checks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneMetrics } from '../../src/modules/metrics/control-plane-metrics.js';
import type { CarrierSimServer, SimAuth } from '../../src/modules/telephony/providers/simulators.js';
import { SIM_CARRIER_SLICES, SIM_RATES } from '../../src/modules/telephony/providers/simulators.js';
import { TelephonyProviderError } from '../../src/modules/telephony/providers/types.js';
import type { ProvisionRequest, TelephonyProvider, TelephonyProviderName } from '../../src/modules/telephony/providers/types.js';
import { withTelephonyRetry } from '../../src/modules/telephony/providers/with-telephony-retry.js';

export interface TelephonyContractContext {
  name: TelephonyProviderName;
  sim: CarrierSimServer;
  /** The bare adapter on the simulator. */
  provider: TelephonyProvider;
  /** The credentials every request must carry. */
  expectedAuth: SimAuth;
  /** Makes the simulator expect other credentials (the adapter's become wrong). */
  rotateCredentials(): void;
  /** Whether search results carry region and locality (Vonage's do not). */
  hasLocality: boolean;
  /** Checks what the carrier stored for a number provisioned with `request` (webhook URLs, connection, application). */
  expectStoredRouting(request: ProvisionRequest): void;
  close(): Promise<void>;
}

/** Reads `svc_telephony_api_errors_total{provider,method}`. */
export async function errorCount(metrics: ControlPlaneMetrics, provider: string, method: string): Promise<number> {
  const m = await metrics.telephonyApiErrors.get();
  return m.values.find((v) => v.labels.provider === provider && v.labels.method === method)?.value ?? 0;
}

async function failure(p: Promise<unknown>): Promise<TelephonyProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TelephonyProviderError);
  return err as TelephonyProviderError;
}

export function telephonyNumbersContract(factory: () => Promise<TelephonyContractContext>): void {
  describe('number management contract', () => {
    let ctx: TelephonyContractContext;
    beforeAll(async () => {
      ctx = await factory();
    });
    afterAll(async () => ctx?.close());

    const webhooks = (phoneNumber: string): ProvisionRequest => ({
      phoneNumber,
      friendlyName: 'Front desk',
      voiceWebhookUrl: `https://voice.example.com/webhooks/${ctx.name}/voice`,
      statusWebhookUrl: `https://voice.example.com/webhooks/${ctx.name}/status`,
      smsWebhookUrl: `https://voice.example.com/webhooks/${ctx.name}/sms`,
    });

    it('searches local numbers by area code and capability, within the limit', async () => {
      const found = await ctx.provider.searchNumbers({ country: 'US', areaCode: '415', capabilities: ['voice', 'sms'], limit: 3 });
      expect(found).toHaveLength(3);
      for (const n of found) {
        expect(n.phoneNumber).toMatch(/^\+1415555\d{4}$/);
        expect(n.capabilities).toEqual(expect.arrayContaining(['voice', 'sms']));
        expect(n).toMatchObject({ country: 'US', tollFree: false, monthlyCostUsd: SIM_RATES.US.monthlyLocalUsd });
        if (ctx.hasLocality) expect(n).toMatchObject({ region: 'CA', locality: 'San Francisco' });
      }
      const mmsOnly = await ctx.provider.searchNumbers({ country: 'US', areaCode: '212', capabilities: ['mms'], limit: 50 });
      // Every fourth local number is voice-only in the stock: the filter must drop it.
      expect(mmsOnly.length).toBeGreaterThan(0);
      expect(mmsOnly.every((n) => n.capabilities.includes('mms'))).toBe(true);
      expect(mmsOnly.length).toBeLessThan((await ctx.provider.searchNumbers({ country: 'US', areaCode: '212', limit: 50 })).length);
    });

    it('searches toll-free and another country, and matches `contains`', async () => {
      const tollFree = await ctx.provider.searchNumbers({ country: 'US', tollFree: true, limit: 50 });
      expect(tollFree.length).toBeGreaterThan(0);
      expect(tollFree.every((n) => n.tollFree && /^\+1(800|888)/.test(n.phoneNumber) && n.monthlyCostUsd === SIM_RATES.US.monthlyTollFreeUsd)).toBe(true);
      const gb = await ctx.provider.searchNumbers({ country: 'GB', limit: 50 });
      expect(gb.length).toBeGreaterThan(0);
      expect(gb.every((n) => n.country === 'GB' && n.phoneNumber.startsWith('+44') && !n.tollFree)).toBe(true);
      // The fourth line number of the carrier's own slice (each carrier sells different numbers), in each US local block.
      const line = String(SIM_CARRIER_SLICES[ctx.name].us + 3).padStart(4, '0');
      const contains = await ctx.provider.searchNumbers({ country: 'US', contains: `555${line}`, limit: 50 });
      expect(contains.map((n) => n.phoneNumber).sort()).toEqual([`+1212555${line}`, `+1312555${line}`, `+1415555${line}`]);
      expect(await ctx.provider.searchNumbers({ country: 'US', areaCode: '999', limit: 5 })).toEqual([]);
    });

    it('buys a number with the platform webhooks, finds it, and releases it idempotently', async () => {
      const [offer] = await ctx.provider.searchNumbers({ country: 'US', areaCode: '312', capabilities: ['voice', 'sms'], limit: 1 });
      const request = webhooks(offer!.phoneNumber);
      const bought = await ctx.provider.provisionNumber(request);
      expect(bought).toMatchObject({ phoneNumber: offer!.phoneNumber, country: 'US', monthlyCostUsd: SIM_RATES.US.monthlyLocalUsd });
      expect(bought.capabilities).toEqual(expect.arrayContaining(['voice', 'sms']));
      expect(bought.providerSid).not.toBe('');
      ctx.expectStoredRouting(request);
      expect(await ctx.provider.findOwnedNumber(offer!.phoneNumber)).toEqual({ providerSid: bought.providerSid });
      // Bought: no longer offered.
      expect((await ctx.provider.searchNumbers({ country: 'US', areaCode: '312', limit: 50 })).map((n) => n.phoneNumber)).not.toContain(offer!.phoneNumber);

      await ctx.provider.releaseNumber({ providerSid: bought.providerSid, phoneNumber: bought.phoneNumber });
      expect(await ctx.provider.findOwnedNumber(offer!.phoneNumber)).toBeNull();
      await expect(ctx.provider.releaseNumber({ providerSid: bought.providerSid, phoneNumber: bought.phoneNumber })).resolves.toBeUndefined();
    });

    it('refuses to buy a number that is not for sale', async () => {
      const err = await failure(ctx.provider.provisionNumber(webhooks('+15555550100')));
      expect(err).toMatchObject({ provider: ctx.name, method: 'provisionNumber', code: 'rejected', retryable: false });
    });

    it('prices local and toll-free numbers of a country', async () => {
      const p = await ctx.provider.getPricing('gb');
      expect(p.country).toBe('GB');
      expect(p.localNumber.monthlyCostUsd).toBe(SIM_RATES.GB.monthlyLocalUsd);
      expect(p.tollFreeNumber.monthlyCostUsd).toBe(SIM_RATES.GB.monthlyTollFreeUsd);
      expect(p.localNumber.outboundMinuteCostUsd).toBeGreaterThan(0);
      expect(p.localNumber.inboundMinuteCostUsd).toBeGreaterThan(0);
    });

    it('sends the credentials on every request', () => {
      expect(ctx.sim.requests.length).toBeGreaterThan(5);
      for (const r of ctx.sim.requests) expect(r.auth).toEqual(ctx.expectedAuth);
    });

    it('counts and retries 5xx on idempotent calls, and gives up after the last attempt', async () => {
      const metrics = new ControlPlaneMetrics();
      const wrapped = withTelephonyRetry(ctx.provider, { errors: metrics.telephonyApiErrors, baseDelayMs: 5, maxAttempts: 3 });
      ctx.sim.failNext(2, 503);
      expect((await wrapped.getPricing('US')).country).toBe('US');
      expect(await errorCount(metrics, ctx.name, 'getPricing')).toBe(2);
      ctx.sim.failNext(10, 500);
      const err = await failure(wrapped.searchNumbers({ country: 'US', limit: 1 }));
      expect(err).toMatchObject({ code: 'server', status: 500 });
      expect(await errorCount(metrics, ctx.name, 'searchNumbers')).toBe(3);
      ctx.sim.failNext(0, 500);
    });

    it('never retries a purchase after a 500, but does after a 503', async () => {
      const metrics = new ControlPlaneMetrics();
      const wrapped = withTelephonyRetry(ctx.provider, { errors: metrics.telephonyApiErrors, baseDelayMs: 5, maxAttempts: 3 });
      const [a, b] = await ctx.provider.searchNumbers({ country: 'GB', limit: 2 });
      const before = ctx.sim.requests.length;
      ctx.sim.failNext(1, 500);
      expect(await failure(wrapped.provisionNumber(webhooks(a!.phoneNumber)))).toMatchObject({ status: 500, code: 'server' });
      expect(ctx.sim.requests.length - before).toBe(1);
      expect(await errorCount(metrics, ctx.name, 'provisionNumber')).toBe(1);
      ctx.sim.failNext(1, 503);
      const bought = await wrapped.provisionNumber(webhooks(b!.phoneNumber));
      expect(bought.phoneNumber).toBe(b!.phoneNumber);
      expect(await errorCount(metrics, ctx.name, 'provisionNumber')).toBe(2);
      await wrapped.releaseNumber({ providerSid: bought.providerSid, phoneNumber: bought.phoneNumber });
    });

    it('times out a carrier that does not answer, and counts it', async () => {
      const metrics = new ControlPlaneMetrics();
      const wrapped = withTelephonyRetry(ctx.provider, { errors: metrics.telephonyApiErrors, timeoutMs: 150, maxAttempts: 1 });
      ctx.sim.hang = true;
      try {
        const err = await failure(wrapped.findOwnedNumber('+14155550100'));
        expect(err).toMatchObject({ code: 'timeout', retryable: true, status: undefined });
        expect(err.message).toContain('timed out after 150 ms');
      } finally {
        ctx.sim.hang = false;
      }
      expect(await errorCount(metrics, ctx.name, 'findOwnedNumber')).toBe(1);
    });

    it('fails with `unauthorized` on wrong credentials, without retrying', async () => {
      const metrics = new ControlPlaneMetrics();
      const wrapped = withTelephonyRetry(ctx.provider, { errors: metrics.telephonyApiErrors, baseDelayMs: 5 });
      ctx.rotateCredentials();
      const err = await failure(wrapped.getPricing('US'));
      expect(err).toMatchObject({ provider: ctx.name, method: 'getPricing', status: 401, code: 'unauthorized', retryable: false });
      expect(await errorCount(metrics, ctx.name, 'getPricing')).toBe(1);
      expect(ctx.sim.requests.at(-1)!.status).toBe(401);
    });
  });
}
