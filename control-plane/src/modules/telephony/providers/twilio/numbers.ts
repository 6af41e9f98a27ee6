/**
 * Twilio number management over its REST API (reference/telephony-twilio.md §7): plain
 * `fetch` with a `baseUrl`, because the `twilio` SDK has no clean base-URL option (see
 * reference/README.md) and is large. Basic auth `AccountSid:AuthToken`, form bodies.
 */
import { badAnswer, basicAuth, carrierRequest, price } from '../carrier-http.js';
import type { CarrierResponse } from '../carrier-http.js';
import { countryOfNumber, isTollFreeNumber } from '../numbering-plan.js';
import { TelephonyProviderError } from '../types.js';
import type { AvailableNumber, NumberCapability, NumberPricing, NumberSearchQuery, ProvisionRequest, ProvisionedNumber, TelephonyMethod, TelephonyProvider } from '../types.js';

/** Where and as whom the adapter talks to Twilio. */
export interface TwilioNumbersOptions {
  accountSid: string;
  authToken: string;
  /** REST API host, default `https://api.twilio.com` (a simulator's URL in tests and sandbox). */
  baseUrl?: string;
  /** Pricing API host, default `https://pricing.twilio.com`. */
  pricingBaseUrl?: string;
}

interface TwilioNumberResource {
  sid?: string;
  phone_number?: string;
  capabilities?: Record<string, unknown>;
}

/** Twilio's `TelephonyProvider` (`PN…` sids). */
export class TwilioNumbers implements TelephonyProvider {
  readonly name = 'twilio' as const;
  private readonly api: string;
  private readonly pricing: string;
  private readonly auth: string;

  constructor(private readonly opts: TwilioNumbersOptions) {
    this.api = `${(opts.baseUrl ?? 'https://api.twilio.com').replace(/\/+$/, '')}/2010-04-01/Accounts/${encodeURIComponent(opts.accountSid)}`;
    this.pricing = (opts.pricingBaseUrl ?? 'https://pricing.twilio.com').replace(/\/+$/, '');
    this.auth = basicAuth(opts.accountSid, opts.authToken);
  }

  async searchNumbers(query: NumberSearchQuery, signal?: AbortSignal): Promise<AvailableNumber[]> {
    const country = query.country.toUpperCase();
    const params = new URLSearchParams();
    if (query.areaCode) params.set('AreaCode', query.areaCode);
    if (query.contains) params.set('Contains', query.contains);
    for (const cap of query.capabilities ?? []) params.set(CAPABILITY_PARAM[cap], 'true');
    params.set('PageSize', String(query.limit));
    const type = query.tollFree ? 'TollFree' : 'Local';
    const res = await this.call('searchNumbers', 'GET', `${this.api}/AvailablePhoneNumbers/${encodeURIComponent(country)}/${type}.json?${params}`, signal);
    const list = (res.body as { available_phone_numbers?: unknown } | null)?.available_phone_numbers;
    if (!Array.isArray(list)) throw badAnswer('twilio', 'searchNumbers', 'no available_phone_numbers');
    // The search answer carries no price: one pricing lookup for the country gives the monthly cost.
    const monthly = await this.monthlyPrices('searchNumbers', country, signal);
    return (list as Record<string, unknown>[]).map((n) => ({
      phoneNumber: String(n.phone_number),
      country: typeof n.iso_country === 'string' ? n.iso_country : country,
      region: typeof n.region === 'string' && n.region !== '' ? n.region : null,
      locality: typeof n.locality === 'string' && n.locality !== '' ? n.locality : null,
      capabilities: capabilities(n.capabilities),
      tollFree: query.tollFree === true,
      monthlyCostUsd: query.tollFree ? monthly.tollFree : monthly.local,
    }));
  }

  async provisionNumber(request: ProvisionRequest, signal?: AbortSignal): Promise<ProvisionedNumber> {
    const country = request.country ?? countryOfNumber(request.phoneNumber);
    if (!country) throw new TelephonyProviderError({ provider: 'twilio', method: 'provisionNumber', code: 'rejected', message: `twilio provisionNumber: no country known for ${request.phoneNumber}` });
    // Priced before buying: a failed lookup then leaves nothing bought.
    const monthly = await this.monthlyPrices('provisionNumber', country, signal);
    const form = new URLSearchParams({ PhoneNumber: request.phoneNumber, VoiceUrl: request.voiceWebhookUrl, VoiceMethod: 'POST' });
    if (request.friendlyName) form.set('FriendlyName', request.friendlyName);
    if (request.statusWebhookUrl) {
      form.set('StatusCallback', request.statusWebhookUrl);
      form.set('StatusCallbackMethod', 'POST');
    }
    if (request.smsWebhookUrl) {
      form.set('SmsUrl', request.smsWebhookUrl);
      form.set('SmsMethod', 'POST');
    }
    const res = await this.call('provisionNumber', 'POST', `${this.api}/IncomingPhoneNumbers.json`, signal, { body: form });
    const n = res.body as TwilioNumberResource | null;
    if (!n?.sid) throw badAnswer('twilio', 'provisionNumber', 'no sid');
    const phoneNumber = n.phone_number ?? request.phoneNumber;
    return { providerSid: n.sid, phoneNumber, country, capabilities: capabilities(n.capabilities), monthlyCostUsd: isTollFreeNumber(phoneNumber) ? monthly.tollFree : monthly.local };
  }

  async releaseNumber(number: { providerSid: string; phoneNumber: string }, signal?: AbortSignal): Promise<void> {
    const res = await this.call('releaseNumber', 'DELETE', `${this.api}/IncomingPhoneNumbers/${encodeURIComponent(number.providerSid)}.json`, signal, { accept: [404] });
    if (res.status !== 404) return;
    // Unknown sid: released already, unless the account holds the number under another sid.
    const owned = await this.lookup('releaseNumber', number.phoneNumber, signal);
    if (owned && owned.providerSid !== number.providerSid) await this.call('releaseNumber', 'DELETE', `${this.api}/IncomingPhoneNumbers/${encodeURIComponent(owned.providerSid)}.json`, signal, { accept: [404] });
  }

  async getPricing(country: string, signal?: AbortSignal): Promise<NumberPricing> {
    const iso = country.toUpperCase();
    const monthly = await this.monthlyPrices('getPricing', iso, signal);
    // Pricing v2 Voice: inbound per number type, outbound per destination prefix (the cheapest is quoted).
    const res = await this.call('getPricing', 'GET', `${this.pricing}/v2/Voice/Countries/${encodeURIComponent(iso)}`, signal);
    const body = res.body as { inbound_call_prices?: unknown; outbound_prefix_prices?: unknown } | null;
    const inbound = Array.isArray(body?.inbound_call_prices) ? (body.inbound_call_prices as Record<string, unknown>[]) : [];
    const outboundPrices = (Array.isArray(body?.outbound_prefix_prices) ? (body.outbound_prefix_prices as Record<string, unknown>[]) : []).map((p) => price(p.current_price ?? p.base_price)).filter((p) => p > 0);
    const outbound = outboundPrices.length > 0 ? Math.min(...outboundPrices) : 0;
    const inboundFor = (type: string) => price(inbound.find((p) => normaliseType(p.number_type) === type)?.current_price);
    return {
      country: iso,
      localNumber: { monthlyCostUsd: monthly.local, inboundMinuteCostUsd: inboundFor('local'), outboundMinuteCostUsd: outbound },
      tollFreeNumber: { monthlyCostUsd: monthly.tollFree, inboundMinuteCostUsd: inboundFor('toll free'), outboundMinuteCostUsd: outbound },
    };
  }

  async findOwnedNumber(phoneNumber: string, signal?: AbortSignal): Promise<{ providerSid: string } | null> {
    return this.lookup('findOwnedNumber', phoneNumber, signal);
  }

  private async lookup(method: TelephonyMethod, phoneNumber: string, signal?: AbortSignal): Promise<{ providerSid: string } | null> {
    const res = await this.call(method, 'GET', `${this.api}/IncomingPhoneNumbers.json?${new URLSearchParams({ PhoneNumber: phoneNumber })}`, signal);
    const list = (res.body as { incoming_phone_numbers?: unknown } | null)?.incoming_phone_numbers;
    if (!Array.isArray(list)) throw badAnswer('twilio', method, 'no incoming_phone_numbers');
    const match = (list as TwilioNumberResource[]).find((n) => n.phone_number === phoneNumber && typeof n.sid === 'string');
    return match?.sid ? { providerSid: match.sid } : null;
  }

  /** Monthly prices of local and toll-free numbers (Pricing v1 PhoneNumbers, reference §7.4). */
  private async monthlyPrices(method: TelephonyMethod, country: string, signal?: AbortSignal): Promise<{ local: number; tollFree: number }> {
    const res = await this.call(method, 'GET', `${this.pricing}/v1/PhoneNumbers/Countries/${encodeURIComponent(country)}`, signal);
    const prices = (res.body as { phone_number_prices?: unknown } | null)?.phone_number_prices;
    if (!Array.isArray(prices)) throw badAnswer('twilio', method, 'no phone_number_prices');
    const of = (type: string) => {
      const p = (prices as Record<string, unknown>[]).find((x) => normaliseType(x.number_type) === type);
      return price(p?.current_price ?? p?.base_price);
    };
    return { local: of('local'), tollFree: of('toll free') };
  }

  private call(method: TelephonyMethod, httpMethod: 'GET' | 'POST' | 'DELETE', url: string, signal: AbortSignal | undefined, extra: { body?: URLSearchParams; accept?: number[] } = {}): Promise<CarrierResponse> {
    return carrierRequest({ provider: 'twilio', method, httpMethod, url, headers: { authorization: this.auth }, signal, describeError: twilioError, ...extra });
  }
}

const CAPABILITY_PARAM: Record<NumberCapability, string> = { voice: 'VoiceEnabled', sms: 'SmsEnabled', mms: 'MmsEnabled' };

// The wire casing of capability keys is unconfirmed (reference §7.1): read them case-insensitively.
function capabilities(raw: unknown): NumberCapability[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const on = new Set(Object.entries(raw).filter(([, v]) => v === true).map(([k]) => k.toLowerCase()));
  return (['voice', 'sms', 'mms'] as const).filter((c) => on.has(c));
}

// `toll free`, `toll_free`, `Toll Free` are all seen (reference §7.4, unconfirmed): compare normalised.
function normaliseType(v: unknown): string {
  return typeof v === 'string' ? v.toLowerCase().replace(/[_-]/g, ' ').trim() : '';
}

function twilioError(body: unknown): string | undefined {
  const b = body as { code?: unknown; message?: unknown } | null;
  return b && typeof b.message === 'string' ? `${String(b.code ?? '')} ${b.message}`.trim() : undefined;
}
