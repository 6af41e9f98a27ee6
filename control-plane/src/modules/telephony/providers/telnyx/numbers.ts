/**
 * Telnyx number management over API v2 (reference/telephony-telnyx.md §6): plain `fetch`
 * with a `baseUrl` (the `telnyx` SDK is not installed and this is five endpoints), Bearer
 * API key, JSON bodies wrapped in `{data}`.
 *
 * Telnyx points inbound calls at a connection (a TeXML application or a Call Control app),
 * not at a URL per number. A number is ordered onto `connectionId` when one is configured;
 * otherwise onto a TeXML application whose `voice_url` is the platform's webhook, found by
 * name or created once (cached per URL).
 */
import { badAnswer, carrierRequest, price } from '../carrier-http.js';
import type { CarrierResponse } from '../carrier-http.js';
import { countryOfNumber, isTollFreeNumber, keypadDigits } from '../numbering-plan.js';
import { TelephonyProviderError } from '../types.js';
import type { AvailableNumber, NumberCapability, NumberPricing, NumberSearchQuery, ProvisionRequest, ProvisionedNumber, TelephonyMethod, TelephonyProvider } from '../types.js';

/** Name of the TeXML application the adapter creates (and looks for). */
export const TELNYX_TEXML_APP_NAME = 'Voice Agent Platform';

/**
 * Per-minute prices quoted by `getPricing` (USD). Telnyx publishes them on its rate card but
 * has no pricing endpoint in API v2 (unconfirmed), so they are configuration.
 */
export const TELNYX_DEFAULT_MINUTE_RATES_USD = Object.freeze({ inbound: 0.0035, outbound: 0.005 });

/** Where and as whom the adapter talks to Telnyx. */
export interface TelnyxNumbersOptions {
  apiKey: string;
  /** API base including `/v2`, default `https://api.telnyx.com/v2`. */
  baseUrl?: string;
  /** Order numbers onto this connection (TeXML / Call Control app id) instead of the adapter's TeXML application. */
  connectionId?: string | undefined;
  /** Per-minute prices `getPricing` quotes; default {@link TELNYX_DEFAULT_MINUTE_RATES_USD}. */
  minuteRatesUsd?: { inbound: number; outbound: number };
  /** How often and how long apart to look for an ordered number that is still pending (ms). */
  orderPoll?: { attempts: number; intervalMs: number };
}

interface AvailableRecord {
  phone_number?: string;
  region_information?: { region_type?: string; region_name?: string }[];
  cost_information?: { monthly_cost?: string; currency?: string };
  features?: { name?: string }[];
}

/** Telnyx's `TelephonyProvider` (providerSid: the phone-number id of `/v2/phone_numbers`). */
export class TelnyxNumbers implements TelephonyProvider {
  readonly name = 'telnyx' as const;
  private readonly base: string;
  private readonly texmlApps = new Map<string, string>();

  constructor(private readonly opts: TelnyxNumbersOptions) {
    this.base = (opts.baseUrl ?? 'https://api.telnyx.com/v2').replace(/\/+$/, '');
  }

  async searchNumbers(query: NumberSearchQuery, signal?: AbortSignal): Promise<AvailableNumber[]> {
    const q = new URLSearchParams({ 'filter[country_code]': query.country.toUpperCase(), 'filter[phone_number_type]': query.tollFree ? 'toll_free' : 'local' });
    if (query.areaCode) q.set('filter[national_destination_code]', query.areaCode);
    if (query.contains) q.set('filter[phone_number][contains]', keypadDigits(query.contains));
    for (const cap of query.capabilities ?? []) q.append('filter[features][]', cap);
    q.set('filter[limit]', String(query.limit));
    const list = await this.available('searchNumbers', q, signal);
    return list.map((n) => ({
      phoneNumber: String(n.phone_number),
      country: region(n, 'country_code') ?? query.country.toUpperCase(),
      region: region(n, 'state'),
      locality: region(n, 'location'),
      capabilities: features(n),
      tollFree: query.tollFree === true,
      monthlyCostUsd: price(n.cost_information?.monthly_cost),
    }));
  }

  async provisionNumber(request: ProvisionRequest, signal?: AbortSignal): Promise<ProvisionedNumber> {
    const country = request.country ?? countryOfNumber(request.phoneNumber);
    if (!country) throw new TelephonyProviderError({ provider: 'telnyx', method: 'provisionNumber', code: 'rejected', message: `telnyx provisionNumber: no country known for ${request.phoneNumber}` });
    // Looked up before ordering: price and features, and nothing is bought if this fails.
    // Matching `contains` against the whole E.164 digits is unconfirmed; without a match the
    // order still goes ahead (Telnyx decides) and the type's price is used.
    const exact = await this.available('provisionNumber', new URLSearchParams({ 'filter[country_code]': country, 'filter[phone_number][contains]': request.phoneNumber.slice(1), 'filter[limit]': '1' }), signal);
    const offer = exact.find((n) => n.phone_number === request.phoneNumber);
    const typePrice = offer ? undefined : await this.monthlyPrice('provisionNumber', country, isTollFreeNumber(request.phoneNumber), signal);
    const connectionId = this.opts.connectionId ?? (await this.texmlApp('provisionNumber', request, signal));
    const order = await this.call('provisionNumber', 'POST', '/number_orders', signal, {
      body: { phone_numbers: [{ phone_number: request.phoneNumber }], connection_id: connectionId, ...(request.friendlyName ? { customer_reference: request.friendlyName } : {}) },
    });
    const data = (order.body as { data?: { status?: string; phone_numbers?: { id?: string; phone_number?: string; status?: string }[] } } | null)?.data;
    const entry = data?.phone_numbers?.find((p) => p.phone_number === request.phoneNumber);
    if (!data || !entry) throw badAnswer('telnyx', 'provisionNumber', 'no order entry for the number');
    if (data.status === 'failure' || entry.status === 'failure') throw new TelephonyProviderError({ provider: 'telnyx', method: 'provisionNumber', status: 422, code: 'rejected', message: `telnyx provisionNumber: the order for ${request.phoneNumber} failed` });
    // The order entry's `id` is NOT the phone number's id (the cause of the repair tool): ask
    // /v2/phone_numbers for the canonical one, waiting briefly while the order completes.
    const poll = this.opts.orderPoll ?? { attempts: 5, intervalMs: 400 };
    let owned: { providerSid: string } | null = null;
    for (let i = 0; i < poll.attempts && !owned; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, poll.intervalMs));
      // Bought already: a failed lookup must not fail (and so retry) the purchase.
      owned = await this.lookup('provisionNumber', request.phoneNumber, signal).catch(() => null);
    }
    return {
      // Still pending: the order entry's id stands in; `repair-provider-sids` corrects it later.
      providerSid: owned?.providerSid ?? String(entry.id),
      phoneNumber: request.phoneNumber,
      country,
      capabilities: offer ? features(offer) : ['voice'],
      monthlyCostUsd: offer ? price(offer.cost_information?.monthly_cost) : typePrice!,
    };
  }

  async releaseNumber(number: { providerSid: string; phoneNumber: string }, signal?: AbortSignal): Promise<void> {
    const res = await this.call('releaseNumber', 'DELETE', `/phone_numbers/${encodeURIComponent(number.providerSid)}`, signal, { accept: [404] });
    if (res.status !== 404) return;
    // A stale id (an order entry's): the number may still be held under its canonical id.
    const owned = await this.lookup('releaseNumber', number.phoneNumber, signal);
    if (owned && owned.providerSid !== number.providerSid) await this.call('releaseNumber', 'DELETE', `/phone_numbers/${encodeURIComponent(owned.providerSid)}`, signal, { accept: [404] });
  }

  async getPricing(country: string, signal?: AbortSignal): Promise<NumberPricing> {
    const iso = country.toUpperCase();
    const local = await this.monthlyPrice('getPricing', iso, false, signal);
    const tollFree = await this.monthlyPrice('getPricing', iso, true, signal);
    const rates = this.opts.minuteRatesUsd ?? TELNYX_DEFAULT_MINUTE_RATES_USD;
    return {
      country: iso,
      localNumber: { monthlyCostUsd: local, inboundMinuteCostUsd: rates.inbound, outboundMinuteCostUsd: rates.outbound },
      tollFreeNumber: { monthlyCostUsd: tollFree, inboundMinuteCostUsd: rates.inbound, outboundMinuteCostUsd: rates.outbound },
    };
  }

  async findOwnedNumber(phoneNumber: string, signal?: AbortSignal): Promise<{ providerSid: string } | null> {
    return this.lookup('findOwnedNumber', phoneNumber, signal);
  }

  private async lookup(method: TelephonyMethod, phoneNumber: string, signal?: AbortSignal): Promise<{ providerSid: string } | null> {
    const res = await this.call(method, 'GET', `/phone_numbers?${new URLSearchParams({ 'filter[phone_number]': phoneNumber })}`, signal);
    const data = (res.body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw badAnswer('telnyx', method, 'no data');
    const match = (data as { id?: unknown; phone_number?: unknown }[]).find((n) => n.phone_number === phoneNumber && (typeof n.id === 'string' || typeof n.id === 'number'));
    return match ? { providerSid: String(match.id) } : null;
  }

  private async available(method: TelephonyMethod, q: URLSearchParams, signal?: AbortSignal): Promise<AvailableRecord[]> {
    const res = await this.call(method, 'GET', `/available_phone_numbers?${q}`, signal);
    const data = (res.body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw badAnswer('telnyx', method, 'no data');
    return data as AvailableRecord[];
  }

  /** Monthly price of a number type in a country: the first offer's (0 when none is offered). */
  private async monthlyPrice(method: TelephonyMethod, country: string, tollFree: boolean, signal?: AbortSignal): Promise<number> {
    const list = await this.available(method, new URLSearchParams({ 'filter[country_code]': country, 'filter[phone_number_type]': tollFree ? 'toll_free' : 'local', 'filter[limit]': '1' }), signal);
    return price(list[0]?.cost_information?.monthly_cost);
  }

  /** The TeXML application whose voice URL is the platform's webhook: found by name, else created. `filter[friendly_name]` is unconfirmed; the match is checked here. */
  private async texmlApp(method: TelephonyMethod, request: ProvisionRequest, signal?: AbortSignal): Promise<string> {
    const cached = this.texmlApps.get(request.voiceWebhookUrl);
    if (cached) return cached;
    const found = await this.call(method, 'GET', `/texml_applications?${new URLSearchParams({ 'filter[friendly_name]': TELNYX_TEXML_APP_NAME })}`, signal);
    const apps = (found.body as { data?: { id?: unknown; voice_url?: unknown }[] } | null)?.data ?? [];
    let id = apps.find((a) => a.voice_url === request.voiceWebhookUrl)?.id;
    if (id === undefined) {
      const created = await this.call(method, 'POST', '/texml_applications', signal, {
        body: { friendly_name: TELNYX_TEXML_APP_NAME, voice_url: request.voiceWebhookUrl, voice_method: 'post', ...(request.statusWebhookUrl ? { status_callback: request.statusWebhookUrl, status_callback_method: 'post' } : {}) },
      });
      id = (created.body as { data?: { id?: unknown } } | null)?.data?.id;
    }
    if (typeof id !== 'string' && typeof id !== 'number') throw badAnswer('telnyx', method, 'no TeXML application id');
    this.texmlApps.set(request.voiceWebhookUrl, String(id));
    return String(id);
  }

  private call(method: TelephonyMethod, httpMethod: 'GET' | 'POST' | 'DELETE', path: string, signal: AbortSignal | undefined, extra: { body?: object; accept?: number[] } = {}): Promise<CarrierResponse> {
    return carrierRequest({ provider: 'telnyx', method, httpMethod, url: `${this.base}${path}`, headers: { authorization: `Bearer ${this.opts.apiKey}` }, signal, describeError: telnyxError, ...extra });
  }
}

function region(n: AvailableRecord, type: string): string | null {
  const name = n.region_information?.find((r) => r.region_type === type)?.region_name;
  return typeof name === 'string' && name !== '' ? name : null;
}

function features(n: AvailableRecord): NumberCapability[] {
  const names = new Set((n.features ?? []).map((f) => f.name?.toLowerCase()));
  return (['voice', 'sms', 'mms'] as const).filter((c) => names.has(c));
}

function telnyxError(body: unknown): string | undefined {
  const e = (body as { errors?: { code?: unknown; title?: unknown; detail?: unknown }[] } | null)?.errors?.[0];
  return e ? [e.code, e.title, e.detail].filter((x) => typeof x === 'string' && x !== '').join(' ') : undefined;
}
