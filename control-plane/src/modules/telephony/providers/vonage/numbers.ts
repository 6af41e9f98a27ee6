/**
 * Vonage number management over the Numbers and Pricing REST APIs on rest.nexmo.com.
 * reference/telephony-vonage.md has no numbers section: this follows Vonage's public API
 * from memory, and the points marked "unconfirmed" could not be checked. Plain `fetch`
 * with a `baseUrl` (the SDK is not installed); form bodies; MSISDNs without `+`.
 *
 * Voice on a Vonage number is routed through an application: before buying, the adapter
 * points the application's voice `answer_url` and `event_url` at the platform's Vonage
 * webhooks, with signed callbacks on (Applications API v2 on api.nexmo.com, Basic auth:
 * GET, then PUT of the whole application with only the voice webhooks changed); the bought
 * number is then linked to it with `app_id`.
 */
import { badAnswer, basicAuth, carrierRequest, price } from '../carrier-http.js';
import type { CarrierResponse } from '../carrier-http.js';
import { callingCode, countryOfNumber, isTollFreeNumber, keypadDigits } from '../numbering-plan.js';
import { TelephonyProviderError } from '../types.js';
import type { AvailableNumber, NumberCapability, NumberPricing, NumberSearchQuery, ProvisionRequest, ProvisionedNumber, TelephonyMethod, TelephonyProvider } from '../types.js';

/** Inbound per-minute price quoted by `getPricing` (USD): Vonage has no inbound-rate endpoint (unconfirmed), so it is configuration. */
export const VONAGE_DEFAULT_INBOUND_MINUTE_USD = 0.0035;

/** Where and as whom the adapter talks to Vonage. */
export interface VonageNumbersOptions {
  apiKey: string;
  apiSecret: string;
  /** Default `https://rest.nexmo.com`. */
  baseUrl?: string;
  /** The Vonage application voice calls to bought numbers go to; provisioning points its voice webhooks at the platform. Required to provision. */
  applicationId?: string | undefined;
  /** Applications API base, default `https://api.nexmo.com` (another host than the Numbers API). */
  applicationsBaseUrl?: string;
  inboundMinuteUsd?: number;
}

interface VonageNumber {
  country?: string;
  msisdn?: string;
  type?: string;
  cost?: string;
  features?: string[];
}

/** Vonage's `TelephonyProvider` (providerSid: the MSISDN, Vonage has no other id). */
export class VonageNumbers implements TelephonyProvider {
  readonly name = 'vonage' as const;
  private readonly base: string;
  private readonly appsBase: string;
  private readonly auth: string;
  /** `answer|event` URLs the application was last seen or set to point at (one GET per purchase is enough, none when unchanged). */
  private applicationWebhooks: string | null = null;

  constructor(private readonly opts: VonageNumbersOptions) {
    this.base = (opts.baseUrl ?? 'https://rest.nexmo.com').replace(/\/+$/, '');
    this.appsBase = (opts.applicationsBaseUrl ?? 'https://api.nexmo.com').replace(/\/+$/, '');
    // Basic auth rather than api_key/api_secret query parameters keeps the secret out of URLs and logs (Numbers API accepting it: unconfirmed).
    this.auth = basicAuth(opts.apiKey, opts.apiSecret);
  }

  async searchNumbers(query: NumberSearchQuery, signal?: AbortSignal): Promise<AvailableNumber[]> {
    const country = query.country.toUpperCase();
    const q = new URLSearchParams({ country, type: query.tollFree ? 'landline-toll-free' : 'landline' });
    const contains = query.contains ? keypadDigits(query.contains) : undefined;
    const code = callingCode(country);
    // One pattern per search: the area code (a prefix after the calling code) wins, `contains` is then applied here.
    if (query.areaCode && code) {
      q.set('pattern', `${code}${query.areaCode}`);
      q.set('search_pattern', '0');
    } else if (contains) {
      q.set('pattern', contains);
      q.set('search_pattern', '1');
    }
    if (query.capabilities?.length) q.set('features', query.capabilities.map((c) => c.toUpperCase()).join(','));
    const filterHere = Boolean(query.areaCode && code && contains);
    q.set('size', String(filterHere ? 100 : Math.min(query.limit, 100)));
    const found = await this.search('searchNumbers', q, signal);
    return found
      .filter((n) => !filterHere || String(n.msisdn).includes(contains!))
      .slice(0, query.limit)
      .map((n) => ({
        phoneNumber: `+${n.msisdn}`,
        country: n.country ?? country,
        // The Numbers API gives no region or locality.
        region: null,
        locality: null,
        capabilities: features(n),
        tollFree: n.type === 'landline-toll-free',
        monthlyCostUsd: price(n.cost),
      }));
  }

  async provisionNumber(request: ProvisionRequest, signal?: AbortSignal): Promise<ProvisionedNumber> {
    const country = request.country ?? countryOfNumber(request.phoneNumber);
    const reject = (why: string) => new TelephonyProviderError({ provider: 'vonage', method: 'provisionNumber', code: 'rejected', message: `vonage provisionNumber: ${why}` });
    if (!country) throw reject(`no country known for ${request.phoneNumber}`);
    if (!this.opts.applicationId) throw reject('no Vonage application configured to route voice to the platform');
    // Before buying: a number whose calls could not reach the platform is not worth having.
    await this.pointApplication(this.opts.applicationId, request, signal);
    const msisdn = request.phoneNumber.replace(/^\+/, '');
    // Looked up before buying: price and features, and nothing is bought if this fails.
    const offer = (await this.search('provisionNumber', new URLSearchParams({ country, pattern: msisdn, search_pattern: '0', size: '1' }), signal)).find((n) => n.msisdn === msisdn);
    await this.call('provisionNumber', 'POST', '/number/buy', signal, { body: new URLSearchParams({ country, msisdn }) });
    const update = new URLSearchParams({ country, msisdn, app_id: this.opts.applicationId, voiceCallbackType: 'app', voiceCallbackValue: this.opts.applicationId });
    if (request.statusWebhookUrl) update.set('voiceStatusCallback', request.statusWebhookUrl);
    if (request.smsWebhookUrl) update.set('moHttpUrl', request.smsWebhookUrl);
    try {
      await this.call('provisionNumber', 'POST', '/number/update', signal, { body: update });
    } catch (err) {
      // A bought number nobody can call is worse than none: give it back, then fail.
      await this.call('provisionNumber', 'POST', '/number/cancel', undefined, { body: new URLSearchParams({ country, msisdn }) }).catch(() => undefined);
      // Without a status: the purchase did happen, so the wrapper must not retry it blindly.
      throw new TelephonyProviderError({ provider: 'vonage', method: 'provisionNumber', code: 'server', message: `vonage provisionNumber: bought ${msisdn} but could not link it (${err instanceof Error ? err.message : 'failed'}); cancelled`, cause: err });
    }
    return {
      providerSid: msisdn,
      phoneNumber: `+${msisdn}`,
      country,
      capabilities: offer ? features(offer) : ['voice'],
      monthlyCostUsd: offer ? price(offer.cost) : await this.monthlyPrice('provisionNumber', country, isTollFreeNumber(request.phoneNumber), signal),
    };
  }

  async releaseNumber(number: { providerSid: string; phoneNumber: string }, signal?: AbortSignal): Promise<void> {
    const msisdn = number.phoneNumber.replace(/^\+/, '');
    const country = countryOfNumber(number.phoneNumber) ?? (await this.owned('releaseNumber', msisdn, signal))?.country;
    if (!country) return; // not ours any more, and no plan to name its country
    // Cancelling a number the account does not hold fails (420 "method failed", unconfirmed): check before calling it an error.
    const res = await this.call('releaseNumber', 'POST', '/number/cancel', signal, { body: new URLSearchParams({ country, msisdn }), accept: [404, 420] });
    if (res.status === 200) return;
    if (await this.owned('releaseNumber', msisdn, signal)) throw new TelephonyProviderError({ provider: 'vonage', method: 'releaseNumber', status: res.status, code: 'rejected', message: `vonage releaseNumber: HTTP ${res.status} cancelling a number the account still holds` });
  }

  async getPricing(country: string, signal?: AbortSignal): Promise<NumberPricing> {
    const iso = country.toUpperCase();
    const res = await this.call('getPricing', 'GET', `/account/get-pricing/outbound/voice?${new URLSearchParams({ country: iso })}`, signal);
    const body = res.body as { defaultPrice?: unknown; networks?: { price?: unknown }[] } | null;
    if (!body) throw badAnswer('vonage', 'getPricing', 'empty body');
    const outbound = price(body.defaultPrice) || Math.min(...(body.networks ?? []).map((n) => price(n.price)).filter((p) => p > 0), Number.POSITIVE_INFINITY);
    const outboundMinute = Number.isFinite(outbound) ? outbound : 0;
    const inbound = this.opts.inboundMinuteUsd ?? VONAGE_DEFAULT_INBOUND_MINUTE_USD;
    return {
      country: iso,
      localNumber: { monthlyCostUsd: await this.monthlyPrice('getPricing', iso, false, signal), inboundMinuteCostUsd: inbound, outboundMinuteCostUsd: outboundMinute },
      tollFreeNumber: { monthlyCostUsd: await this.monthlyPrice('getPricing', iso, true, signal), inboundMinuteCostUsd: inbound, outboundMinuteCostUsd: outboundMinute },
    };
  }

  async findOwnedNumber(phoneNumber: string, signal?: AbortSignal): Promise<{ providerSid: string } | null> {
    const n = await this.owned('findOwnedNumber', phoneNumber.replace(/^\+/, ''), signal);
    return n?.msisdn ? { providerSid: n.msisdn } : null;
  }

  /**
   * Makes application `id` send voice calls to `request.voiceWebhookUrl` (answer) and
   * `statusWebhookUrl` (event), POST, signed (our webhooks verify the JWT). The PUT carries the
   * application as read, so its name, keys and other capabilities are kept.
   */
  private async pointApplication(id: string, request: ProvisionRequest, signal?: AbortSignal): Promise<void> {
    const want = `${request.voiceWebhookUrl}|${request.statusWebhookUrl ?? ''}`;
    if (this.applicationWebhooks === want) return;
    const path = `/v2/applications/${encodeURIComponent(id)}`;
    const read = await this.call('provisionNumber', 'GET', path, signal, { base: this.appsBase });
    const app = read.body as VonageApplication | null;
    if (!app || typeof app.name !== 'string') throw badAnswer('vonage', 'provisionNumber', 'application without a name');
    const voice = app.capabilities?.voice ?? {};
    const webhooks = voice.webhooks ?? {};
    const eventUrl = request.statusWebhookUrl ?? webhooks.event_url?.address;
    const already = webhooks.answer_url?.address === request.voiceWebhookUrl && webhooks.answer_url?.http_method === 'POST' && (!request.statusWebhookUrl || webhooks.event_url?.address === eventUrl) && voice.signed_callbacks === true;
    if (!already) {
      const { _links: _ignored, ...rest } = app;
      const body: VonageApplication = {
        ...rest,
        keys: app.keys?.public_key ? { public_key: app.keys.public_key } : undefined,
        capabilities: {
          ...app.capabilities,
          voice: {
            ...voice,
            webhooks: {
              ...webhooks,
              answer_url: { ...webhooks.answer_url, address: request.voiceWebhookUrl, http_method: 'POST' },
              ...(eventUrl ? { event_url: { ...webhooks.event_url, address: eventUrl, http_method: 'POST' } } : {}),
            },
            signed_callbacks: true,
          },
        },
      };
      await this.call('provisionNumber', 'PUT', path, signal, { base: this.appsBase, body });
    }
    this.applicationWebhooks = want;
  }

  /** The account's number `msisdn` (`GET /account/numbers`), or undefined. */
  private async owned(method: TelephonyMethod, msisdn: string, signal?: AbortSignal): Promise<VonageNumber | undefined> {
    const res = await this.call(method, 'GET', `/account/numbers?${new URLSearchParams({ pattern: msisdn, search_pattern: '0' })}`, signal);
    // An empty answer is `{"count":0}` without `numbers`.
    const list = (res.body as { numbers?: VonageNumber[] } | null)?.numbers ?? [];
    return list.find((n) => n.msisdn === msisdn);
  }

  private async search(method: TelephonyMethod, q: URLSearchParams, signal?: AbortSignal): Promise<VonageNumber[]> {
    const res = await this.call(method, 'GET', `/number/search?${q}`, signal);
    const body = res.body as { count?: unknown; numbers?: unknown } | null;
    if (!body || typeof body.count !== 'number') throw badAnswer('vonage', method, 'no count');
    return Array.isArray(body.numbers) ? (body.numbers as VonageNumber[]) : [];
  }

  /** Monthly price of a number type: the first offer's cost (0 when none is offered). Prices are taken to be in USD (the account's currency: unconfirmed). */
  private async monthlyPrice(method: TelephonyMethod, country: string, tollFree: boolean, signal?: AbortSignal): Promise<number> {
    const list = await this.search(method, new URLSearchParams({ country, type: tollFree ? 'landline-toll-free' : 'landline', size: '1' }), signal);
    return price(list[0]?.cost);
  }

  private call(method: TelephonyMethod, httpMethod: 'GET' | 'POST' | 'PUT', path: string, signal: AbortSignal | undefined, extra: { body?: URLSearchParams | object; accept?: number[]; base?: string } = {}): Promise<CarrierResponse> {
    const { base = this.base, ...rest } = extra;
    return carrierRequest({ provider: 'vonage', method, httpMethod, url: `${base}${path}`, headers: { authorization: this.auth }, signal, describeError: vonageError, ...rest });
  }
}

/** An application as the Applications API v2 reads and writes it (the parts we touch; the rest is passed through). */
interface VonageWebhook {
  address?: string;
  http_method?: string;
  [k: string]: unknown;
}
interface VonageApplication {
  name: string;
  keys?: { public_key?: string } | undefined;
  capabilities?: { voice?: { webhooks?: { answer_url?: VonageWebhook; event_url?: VonageWebhook; [k: string]: unknown }; signed_callbacks?: boolean; [k: string]: unknown }; [k: string]: unknown };
  _links?: unknown;
  [k: string]: unknown;
}

function features(n: VonageNumber): NumberCapability[] {
  const f = new Set((n.features ?? []).map((x) => x.toLowerCase()));
  return (['voice', 'sms', 'mms'] as const).filter((c) => f.has(c));
}

function vonageError(body: unknown): string | undefined {
  const b = body as Record<string, unknown> | null;
  if (!b) return undefined;
  // Numbers API: {"error-code","error-code-label"}; Applications API: RFC 7807 {title, detail}.
  const label = b['error-code-label'] ?? b.title;
  return typeof label === 'string' ? `${String(b['error-code'] ?? '')} ${label}`.trim() : undefined;
}
