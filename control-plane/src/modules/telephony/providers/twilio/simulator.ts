/**
 * A protocol-faithful Twilio number API on loopback (reference/telephony-twilio.md §7):
 * AvailablePhoneNumbers search, IncomingPhoneNumbers buy / update / list / release on
 * `/2010-04-01/Accounts/{AccountSid}/…`, and the Pricing API (`/v1/PhoneNumbers/…`,
 * `/v2/Voice/…`, which Twilio serves on pricing.twilio.com: point both base URLs here).
 * Basic auth `AccountSid:AuthToken`; errors are Twilio's `{code, message, more_info, status}`.
 */
import { CarrierSimServer, param } from '../carrier-sim-server.js';
import type { SimReply, SimRequest } from '../carrier-sim-server.js';
import { SIM_RATES, SimNumberBook, defaultSimInventory } from '../sim-inventory.js';
import type { SimNumber } from '../sim-inventory.js';

/** What the simulator stores on a number the account bought (the webhook URLs set on it). */
export interface TwilioSimOwned {
  sid: string;
  friendlyName: string;
  voiceUrl: string | null;
  voiceMethod: string;
  statusCallback: string | null;
  smsUrl: string | null;
}

/** Test credentials the simulator starts with. */
export const TWILIO_SIM_ACCOUNT_SID = 'AC0000000000000000000000000000051a';
export const TWILIO_SIM_AUTH_TOKEN = 'twilio-sim-auth-token';

const ERROR_MESSAGES: Record<number, [number, string]> = {
  400: [21422, 'PhoneNumber requested is not available'],
  401: [20003, 'Authenticate'],
  403: [20403, 'Forbidden'],
  404: [20404, 'The requested resource was not found'],
  429: [20429, 'Too Many Requests'],
  500: [20500, 'Internal Server Error'],
  503: [20503, 'Service Unavailable'],
};

/** The Twilio number simulator; `start()` listens on 127.0.0.1. */
export class TwilioNumbersSimulator extends CarrierSimServer {
  /** The stock and the account's numbers. */
  readonly numbers = new SimNumberBook<TwilioSimOwned>(defaultSimInventory('twilio'));
  accountSid = TWILIO_SIM_ACCOUNT_SID;
  authToken = TWILIO_SIM_AUTH_TOKEN;
  private nextSid = 1;

  static async start(): Promise<TwilioNumbersSimulator> {
    const sim = new TwilioNumbersSimulator();
    await sim.listen();
    return sim;
  }

  /** Changes the account the simulator accepts. */
  setCredentials(c: { accountSid: string; authToken: string }): void {
    this.accountSid = c.accountSid;
    this.authToken = c.authToken;
  }

  /** Buys `phoneNumber` for the account without a request (test setup); returns its sid. */
  seedOwned(phoneNumber: string): string {
    const sid = this.newSid();
    if (!this.numbers.buy(phoneNumber, { sid, friendlyName: phoneNumber, voiceUrl: null, voiceMethod: 'POST', statusCallback: null, smsUrl: null })) throw new Error(`${phoneNumber} is not in the simulator's stock`);
    return sid;
  }

  protected checkAuth(req: SimRequest): SimReply | null {
    const a = req.auth;
    if (a?.scheme === 'basic' && a.user === this.accountSid && a.password === this.authToken) {
      const account = /^\/2010-04-01\/Accounts\/([^/]+)/.exec(req.path)?.[1];
      if (account === undefined || account === this.accountSid) return null;
    }
    return { status: 401, body: this.errorBody(401) };
  }

  protected errorBody(status: number, message?: string): unknown {
    const [code, text] = ERROR_MESSAGES[status] ?? [20000 + status, 'Error'];
    return { code, message: message ?? text, more_info: `https://www.twilio.com/docs/errors/${code}`, status };
  }

  protected route(req: SimRequest): SimReply {
    const p = req.path;
    let m: RegExpExecArray | null;
    if (req.method === 'GET' && (m = /^\/v1\/PhoneNumbers\/Countries\/([A-Za-z]{2})$/.exec(p))) return this.numberPrices(m[1]!.toUpperCase());
    if (req.method === 'GET' && (m = /^\/v2\/Voice\/Countries\/([A-Za-z]{2})$/.exec(p))) return this.voicePrices(m[1]!.toUpperCase());
    const base = `/2010-04-01/Accounts/${this.accountSid}`;
    if (!p.startsWith(`${base}/`)) return this.notFound();
    const rest = p.slice(base.length);
    if (req.method === 'GET' && (m = /^\/AvailablePhoneNumbers\/([A-Z]{2})\/(Local|TollFree)\.json$/.exec(rest))) return this.search(req, m[1]!, m[2] === 'TollFree', p);
    if (req.method === 'POST' && /^\/IncomingPhoneNumbers(\/(Local|TollFree|Mobile))?\.json$/.test(rest)) return this.buy(req);
    if (req.method === 'GET' && rest === '/IncomingPhoneNumbers.json') return this.list(req);
    if ((m = /^\/IncomingPhoneNumbers\/(PN[0-9a-f]{32})\.json$/.exec(rest))) {
      const owned = this.numbers.ownedNumbers().find((o) => o.state.sid === m![1]);
      if (!owned) return this.notFound();
      if (req.method === 'DELETE') {
        this.numbers.release(owned.number.phoneNumber);
        return { status: 204 };
      }
      if (req.method === 'GET') return { status: 200, body: this.resource(owned.number, owned.state) };
      if (req.method === 'POST') {
        applyConfig(owned.state, req.body);
        return { status: 200, body: this.resource(owned.number, owned.state) };
      }
    }
    return this.notFound();
  }

  private search(req: SimRequest, country: string, tollFree: boolean, path: string): SimReply {
    if (!(country in SIM_RATES)) return this.notFound();
    const contains = param(req.query, 'Contains');
    const pageSize = Math.min(Number(param(req.query, 'PageSize') ?? 50) || 50, 1000);
    const caps = (['Voice', 'Sms', 'Mms'] as const).filter((c) => param(req.query, `${c}Enabled`) === 'true').map((c) => c.toLowerCase());
    const found = this.numbers.search({
      country,
      tollFree,
      areaCode: param(req.query, 'AreaCode'),
      pattern: contains ? { digits: contains.replace(/^\+|\$$/g, ''), anchor: contains.startsWith('+') ? 'start' : contains.endsWith('$') ? 'end' : 'anywhere' } : undefined,
      locality: param(req.query, 'InLocality'),
      region: param(req.query, 'InRegion'),
      capabilities: caps,
      limit: pageSize,
    });
    return {
      status: 200,
      body: {
        uri: `${path}?${new URLSearchParams(req.query as Record<string, string>)}`,
        available_phone_numbers: found.map((n) => ({
          friendly_name: n.phoneNumber,
          phone_number: n.phoneNumber,
          lata: null,
          rate_center: n.rateCenter,
          latitude: null,
          longitude: null,
          locality: n.locality,
          region: n.region,
          postal_code: null,
          iso_country: n.country,
          address_requirements: 'none',
          beta: false,
          capabilities: { voice: n.capabilities.includes('voice'), SMS: n.capabilities.includes('sms'), MMS: n.capabilities.includes('mms'), fax: false },
        })),
      },
    };
  }

  private buy(req: SimRequest): SimReply {
    const phoneNumber = param(req.body, 'PhoneNumber');
    if (!phoneNumber) return { status: 400, body: this.errorBody(400, "A 'PhoneNumber' or 'AreaCode' is required.") };
    const state: TwilioSimOwned = { sid: this.newSid(), friendlyName: phoneNumber, voiceUrl: null, voiceMethod: 'POST', statusCallback: null, smsUrl: null };
    applyConfig(state, req.body);
    const n = this.numbers.buy(phoneNumber, state);
    if (!n) return { status: 400, body: this.errorBody(400, `Phone number ${phoneNumber} is not available.`) };
    return { status: 201, body: this.resource(n, state) };
  }

  private list(req: SimRequest): SimReply {
    const wanted = param(req.query, 'PhoneNumber');
    const rows = this.numbers.ownedNumbers().filter((o) => wanted === undefined || o.number.phoneNumber === wanted);
    return { status: 200, body: { incoming_phone_numbers: rows.map((o) => this.resource(o.number, o.state)), page: 0, page_size: 50, next_page_uri: null } };
  }

  private numberPrices(country: string): SimReply {
    const rates = SIM_RATES[country as SimNumber['country']];
    if (!rates) return this.notFound();
    const p = (v: number) => v.toFixed(2);
    return {
      status: 200,
      body: {
        country: country === 'US' ? 'United States' : 'United Kingdom',
        iso_country: country,
        phone_number_prices: [
          { number_type: 'local', base_price: p(rates.monthlyLocalUsd), current_price: p(rates.monthlyLocalUsd) },
          { number_type: 'toll free', base_price: p(rates.monthlyTollFreeUsd), current_price: p(rates.monthlyTollFreeUsd) },
        ],
        price_unit: 'USD',
        url: `https://pricing.twilio.com/v1/PhoneNumbers/Countries/${country}`,
      },
    };
  }

  private voicePrices(country: string): SimReply {
    const rates = SIM_RATES[country as SimNumber['country']];
    if (!rates) return this.notFound();
    const p = (v: number) => v.toFixed(4);
    return {
      status: 200,
      body: {
        country: country === 'US' ? 'United States' : 'United Kingdom',
        iso_country: country,
        outbound_prefix_prices: [
          { destination_prefixes: [country === 'US' ? '1' : '44'], origination_prefixes: ['ALL'], friendly_name: 'Landline', base_price: p(rates.outboundUsd), current_price: p(rates.outboundUsd) },
          { destination_prefixes: [country === 'US' ? '1800' : '447'], origination_prefixes: ['ALL'], friendly_name: 'Mobile', base_price: p(rates.outboundUsd * 2), current_price: p(rates.outboundUsd * 2) },
        ],
        inbound_call_prices: [
          { number_type: 'local', base_price: p(rates.inboundLocalUsd), current_price: p(rates.inboundLocalUsd) },
          { number_type: 'toll free', base_price: p(rates.inboundTollFreeUsd), current_price: p(rates.inboundTollFreeUsd) },
        ],
        price_unit: 'USD',
        url: `https://pricing.twilio.com/v2/Voice/Countries/${country}`,
      },
    };
  }

  private resource(n: SimNumber, s: TwilioSimOwned): object {
    return {
      sid: s.sid,
      account_sid: this.accountSid,
      friendly_name: s.friendlyName,
      phone_number: n.phoneNumber,
      voice_url: s.voiceUrl,
      voice_method: s.voiceMethod,
      status_callback: s.statusCallback,
      sms_url: s.smsUrl,
      capabilities: { voice: n.capabilities.includes('voice'), sms: n.capabilities.includes('sms'), mms: n.capabilities.includes('mms'), fax: false },
      address_requirements: 'none',
      beta: false,
      origin: 'twilio',
      status: 'in-use',
      uri: `/2010-04-01/Accounts/${this.accountSid}/IncomingPhoneNumbers/${s.sid}.json`,
    };
  }

  private notFound(): SimReply {
    return { status: 404, body: this.errorBody(404) };
  }

  private newSid(): string {
    return `PN${(this.nextSid++).toString(16).padStart(32, '0')}`;
  }
}

function applyConfig(state: TwilioSimOwned, body: unknown): void {
  state.friendlyName = param(body, 'FriendlyName') ?? state.friendlyName;
  state.voiceUrl = param(body, 'VoiceUrl') ?? state.voiceUrl;
  state.voiceMethod = param(body, 'VoiceMethod') ?? state.voiceMethod;
  state.statusCallback = param(body, 'StatusCallback') ?? state.statusCallback;
  state.smsUrl = param(body, 'SmsUrl') ?? state.smsUrl;
}
