/**
 * A Vonage Numbers and Pricing API on loopback, modelled on Vonage's public API (the
 * reference has no numbers section; details marked "unconfirmed" in vonage/numbers.ts are
 * guesses): `/number/search`, `/number/buy`, `/number/update`, `/number/cancel`,
 * `/account/numbers`, `/account/get-pricing/outbound/voice`, and the Applications API v2's
 * `GET`/`PUT /v2/applications/{id}` (api.nexmo.com; one server plays both hosts). Accepts
 * Basic auth and the legacy `api_key`/`api_secret` parameters; Numbers errors are
 * `{"error-code", "error-code-label"}`, Applications errors RFC 7807 documents.
 */
import { CarrierSimServer, param } from '../carrier-sim-server.js';
import type { SimReply, SimRequest } from '../carrier-sim-server.js';
import { SIM_RATES, SimNumberBook, defaultSimInventory } from '../sim-inventory.js';
import type { SimNumber } from '../sim-inventory.js';

/** What the simulator keeps on a number the account bought (what `/number/update` set). */
export interface VonageSimOwned {
  appId: string | null;
  voiceCallbackType: string | null;
  voiceCallbackValue: string | null;
  voiceStatusCallback: string | null;
  moHttpUrl: string | null;
}

export const VONAGE_SIM_API_KEY = 'vonagesimkey';
export const VONAGE_SIM_API_SECRET = 'vonage-sim-secret';
/** The application id sandbox mode links numbers to. */
export const VONAGE_SIM_APPLICATION_ID = '5a1e0000-0000-4000-8000-00000000a991';

const LABELS: Record<number, string> = { 400: 'bad request', 401: 'authentication failed', 403: 'forbidden', 404: 'not found', 420: 'method failed', 429: 'throttled', 500: 'internal error', 503: 'service unavailable' };

/** A Vonage application as the simulator keeps it (Applications API v2 shape, the parts that matter here). */
export interface VonageSimApplication {
  id: string;
  name: string;
  capabilities: { voice?: { webhooks?: Record<string, { address?: string; http_method?: string }>; signed_callbacks?: boolean } } & Record<string, unknown>;
  [k: string]: unknown;
}

/** The Vonage number simulator; `start()` listens on 127.0.0.1. */
export class VonageNumbersSimulator extends CarrierSimServer {
  readonly numbers = new SimNumberBook<VonageSimOwned>(defaultSimInventory('vonage'));
  /** Applications by id; the sandbox one exists from the start, its webhooks pointing nowhere yet. */
  readonly applications = new Map<string, VonageSimApplication>([
    [
      VONAGE_SIM_APPLICATION_ID,
      {
        id: VONAGE_SIM_APPLICATION_ID,
        name: 'Voice Agent Platform (sandbox)',
        capabilities: { voice: { webhooks: { answer_url: { address: 'https://example.invalid/answer', http_method: 'GET' }, event_url: { address: 'https://example.invalid/event', http_method: 'POST' } }, signed_callbacks: false } },
      },
    ],
  ]);
  apiKey = VONAGE_SIM_API_KEY;
  apiSecret = VONAGE_SIM_API_SECRET;

  static async start(): Promise<VonageNumbersSimulator> {
    const sim = new VonageNumbersSimulator();
    await sim.listen();
    return sim;
  }

  setCredentials(c: { apiKey: string; apiSecret: string }): void {
    this.apiKey = c.apiKey;
    this.apiSecret = c.apiSecret;
  }

  /** Buys `phoneNumber` (E.164) without a request (test setup). */
  seedOwned(phoneNumber: string): void {
    if (!this.numbers.buy(phoneNumber, { appId: null, voiceCallbackType: null, voiceCallbackValue: null, voiceStatusCallback: null, moHttpUrl: null })) throw new Error(`${phoneNumber} is not in the simulator's stock`);
  }

  protected checkAuth(req: SimRequest): SimReply | null {
    const a = req.auth;
    if (a?.scheme === 'basic' && a.user === this.apiKey && a.password === this.apiSecret) return null;
    const key = param(req.query, 'api_key') ?? param(req.body, 'api_key');
    const secret = param(req.query, 'api_secret') ?? param(req.body, 'api_secret');
    if (key === this.apiKey && secret === this.apiSecret) return null;
    return { status: 401, body: this.errorBody(401) };
  }

  protected errorBody(status: number, label?: string): unknown {
    return { 'error-code': String(status), 'error-code-label': label ?? LABELS[status] ?? 'error' };
  }

  protected route(req: SimRequest): SimReply {
    const key = `${req.method} ${req.path}`;
    if (key === 'GET /number/search') return this.search(req);
    if (key === 'POST /number/buy') return this.buy(req);
    if (key === 'POST /number/update') return this.update(req);
    if (key === 'POST /number/cancel') return this.cancel(req);
    if (key === 'GET /account/numbers') return this.ownedList(req);
    if (key === 'GET /account/get-pricing/outbound/voice') return this.pricing(req);
    const app = /^\/v2\/applications\/([^/]+)$/.exec(req.path);
    if (app && (req.method === 'GET' || req.method === 'PUT')) return this.application(req, decodeURIComponent(app[1]!));
    return { status: 404, body: this.errorBody(404) };
  }

  /** Applications API v2: read, or replace (PUT needs `name`; what it carries replaces the application). */
  private application(req: SimRequest, id: string): SimReply {
    const app = this.applications.get(id);
    const problem = (status: number, title: string, detail: string) => ({ status, body: { type: `https://developer.nexmo.com/api-errors/application#${status}`, title, detail, instance: `sim-${this.requests.length}` } });
    if (!app) return problem(404, 'Not Found', `Application ${id} does not exist, or you do not have access`);
    if (req.method === 'GET') return { status: 200, body: { ...app, _links: { self: { href: `/v2/applications/${id}` } } } };
    const body = req.body as Partial<VonageSimApplication> | null;
    if (!body || typeof body !== 'object' || typeof body.name !== 'string' || body.name === '') return problem(400, 'Bad Request', 'name is required');
    const next: VonageSimApplication = { ...body, id, name: body.name, capabilities: body.capabilities ?? {} };
    this.applications.set(id, next);
    return { status: 200, body: { ...next, _links: { self: { href: `/v2/applications/${id}` } } } };
  }

  private search(req: SimRequest): SimReply {
    const country = param(req.query, 'country');
    if (!country) return { status: 400, body: this.errorBody(400, 'missing parameter: country') };
    const type = param(req.query, 'type');
    const pattern = param(req.query, 'pattern');
    const mode = param(req.query, 'search_pattern') ?? '1';
    const size = Math.min(Number(param(req.query, 'size') ?? 10) || 10, 100);
    const features = (param(req.query, 'features') ?? '').split(',').filter((f) => f !== '');
    const search = (tollFree: boolean) =>
      this.numbers.search({ country, tollFree, pattern: pattern ? { digits: pattern, anchor: mode === '0' ? 'start' : mode === '2' ? 'end' : 'anywhere' } : undefined, capabilities: features, limit: size });
    // Without `type`, both kinds are offered (landline first).
    const found = type === 'landline-toll-free' ? search(true) : type === 'landline' ? search(false) : [...search(false), ...search(true)].slice(0, size);
    if (found.length === 0) return { status: 200, body: { count: 0 } };
    return { status: 200, body: { count: found.length, numbers: found.map((n) => this.offer(n)) } };
  }

  private buy(req: SimRequest): SimReply {
    const msisdn = param(req.body, 'msisdn');
    const country = param(req.body, 'country');
    if (!msisdn || !country) return { status: 400, body: this.errorBody(400, 'missing parameter: country and msisdn are required') };
    const n = this.numbers.isAvailable(`+${msisdn}`) ? this.numbers.buy(`+${msisdn}`, { appId: null, voiceCallbackType: null, voiceCallbackValue: null, voiceStatusCallback: null, moHttpUrl: null }) : undefined;
    if (!n || n.country !== country.toUpperCase()) {
      if (n) this.numbers.release(n.phoneNumber);
      return { status: 420, body: this.errorBody(420) };
    }
    return { status: 200, body: { 'error-code': '200', 'error-code-label': 'success' } };
  }

  private update(req: SimRequest): SimReply {
    const owned = this.numbers.get(`+${param(req.body, 'msisdn') ?? ''}`);
    if (!owned) return { status: 420, body: this.errorBody(420) };
    const set = (name: string) => param(req.body, name);
    const s = owned.state;
    s.appId = set('app_id') ?? s.appId;
    s.voiceCallbackType = set('voiceCallbackType') ?? s.voiceCallbackType;
    s.voiceCallbackValue = set('voiceCallbackValue') ?? s.voiceCallbackValue;
    s.voiceStatusCallback = set('voiceStatusCallback') ?? s.voiceStatusCallback;
    s.moHttpUrl = set('moHttpUrl') ?? s.moHttpUrl;
    return { status: 200, body: { 'error-code': '200', 'error-code-label': 'success' } };
  }

  private cancel(req: SimRequest): SimReply {
    const released = this.numbers.release(`+${param(req.body, 'msisdn') ?? ''}`);
    return released ? { status: 200, body: { 'error-code': '200', 'error-code-label': 'success' } } : { status: 420, body: this.errorBody(420) };
  }

  private ownedList(req: SimRequest): SimReply {
    const pattern = param(req.query, 'pattern');
    const mode = param(req.query, 'search_pattern') ?? '1';
    const rows = this.numbers.ownedNumbers().filter((o) => {
      const msisdn = o.number.phoneNumber.slice(1);
      if (!pattern) return true;
      return mode === '0' ? msisdn.startsWith(pattern) : mode === '2' ? msisdn.endsWith(pattern) : msisdn.includes(pattern);
    });
    if (rows.length === 0) return { status: 200, body: { count: 0 } };
    return {
      status: 200,
      body: {
        count: rows.length,
        numbers: rows.map((o) => ({ ...this.offer(o.number), app_id: o.state.appId, voiceCallbackType: o.state.voiceCallbackType, voiceCallbackValue: o.state.voiceCallbackValue, voiceStatusCallback: o.state.voiceStatusCallback, moHttpUrl: o.state.moHttpUrl })),
      },
    };
  }

  private pricing(req: SimRequest): SimReply {
    const country = (param(req.query, 'country') ?? '').toUpperCase();
    const rates = SIM_RATES[country as SimNumber['country']];
    if (!rates) return { status: 200, body: { countryCode: country, networks: [] } };
    const p = (v: number) => v.toFixed(8);
    return {
      status: 200,
      body: {
        dialingPrefix: country === 'US' ? '1' : '44',
        defaultPrice: p(rates.outboundUsd),
        currency: 'USD',
        countryDisplayName: country === 'US' ? 'United States' : 'United Kingdom',
        countryCode: country,
        countryName: country === 'US' ? 'United States' : 'United Kingdom',
        networks: [
          { type: 'landline', price: p(rates.outboundUsd), currency: 'USD', mcc: '', mnc: '', networkCode: `${country}-FIXED`, networkName: `${country} Landline` },
          { type: 'mobile', price: p(rates.outboundUsd * 2), currency: 'USD', mcc: '', mnc: '', networkCode: `${country}-MOBILE`, networkName: `${country} Mobile` },
        ],
      },
    };
  }

  private offer(n: SimNumber): object {
    return { country: n.country, msisdn: n.phoneNumber.slice(1), type: n.tollFree ? 'landline-toll-free' : 'landline', cost: n.monthlyUsd.toFixed(2), features: n.capabilities.map((c) => c.toUpperCase()) };
  }
}
