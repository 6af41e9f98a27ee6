/**
 * A protocol-faithful Telnyx number API v2 on loopback (reference/telephony-telnyx.md §6):
 * `available_phone_numbers` with `filter[...]`, `number_orders`, `phone_numbers` list /
 * update / delete, and `texml_applications` (the connection a number's calls go to).
 * Bearer API key; errors are `{errors: [{code, title, detail}]}`. Orders complete at once,
 * and a number's id differs from its order entry's id, as on Telnyx.
 */
import { CarrierSimServer, param, params } from '../carrier-sim-server.js';
import type { SimReply, SimRequest } from '../carrier-sim-server.js';
import { SimNumberBook, defaultSimInventory } from '../sim-inventory.js';
import type { SimNumber } from '../sim-inventory.js';

/** What the simulator keeps on a number the account bought. */
export interface TelnyxSimOwned {
  /** The phone-number id (`/v2/phone_numbers/{id}`). */
  id: string;
  /** The id of the order's entry for the number (not the phone-number id). */
  orderEntryId: string;
  connectionId: string | null;
  customerReference: string | null;
}

/** A TeXML application: where calls to its numbers are answered. */
export interface TelnyxSimTexmlApp {
  id: string;
  friendly_name: string;
  voice_url: string;
  voice_method: string;
  status_callback: string | null;
}

/** The API key the simulator starts with. */
export const TELNYX_SIM_API_KEY = 'KEYtelnyx-sim-0000';

const ERRORS: Record<number, [string, string]> = {
  401: ['10009', 'Authentication failed'],
  403: ['10010', 'Authorization failed'],
  404: ['10005', 'Resource not found'],
  422: ['10015', 'Invalid value'],
  429: ['10011', 'Too many requests'],
  500: ['10007', 'Unexpected error'],
  503: ['10008', 'Service unavailable'],
};

/** The Telnyx number simulator; `start()` listens on 127.0.0.1 (API base: `${url}/v2`). */
export class TelnyxNumbersSimulator extends CarrierSimServer {
  readonly numbers = new SimNumberBook<TelnyxSimOwned>(defaultSimInventory('telnyx'));
  readonly texmlApps: TelnyxSimTexmlApp[] = [];
  apiKey = TELNYX_SIM_API_KEY;
  private seq = 1;

  static async start(): Promise<TelnyxNumbersSimulator> {
    const sim = new TelnyxNumbersSimulator();
    await sim.listen();
    return sim;
  }

  /** The base URL adapters use (`…/v2`). */
  get apiBaseUrl(): string {
    return `${this.url}/v2`;
  }

  setCredentials(c: { apiKey: string }): void {
    this.apiKey = c.apiKey;
  }

  /** Buys `phoneNumber` without a request (test setup); returns its phone-number id and order entry id. */
  seedOwned(phoneNumber: string): TelnyxSimOwned {
    const state: TelnyxSimOwned = { id: this.numberId(), orderEntryId: this.uuid(), connectionId: null, customerReference: null };
    if (!this.numbers.buy(phoneNumber, state)) throw new Error(`${phoneNumber} is not in the simulator's stock`);
    return state;
  }

  protected checkAuth(req: SimRequest): SimReply | null {
    if (req.auth?.scheme === 'bearer' && req.auth.token === this.apiKey) return null;
    return { status: 401, body: this.errorBody(401, 'The API key is missing or invalid.') };
  }

  protected errorBody(status: number, detail?: string): unknown {
    const [code, title] = ERRORS[status] ?? [String(10000 + status), 'Error'];
    return { errors: [{ code, title, detail: detail ?? title }] };
  }

  protected route(req: SimRequest): SimReply {
    const p = req.path;
    let m: RegExpExecArray | null;
    if (req.method === 'GET' && p === '/v2/available_phone_numbers') return this.search(req);
    if (req.method === 'POST' && p === '/v2/number_orders') return this.order(req);
    if (req.method === 'GET' && p === '/v2/phone_numbers') return this.list(req);
    if ((m = /^\/v2\/phone_numbers\/([^/]+)$/.exec(p))) {
      const owned = this.numbers.ownedNumbers().find((o) => o.state.id === m![1]);
      if (!owned) return { status: 404, body: this.errorBody(404, 'Phone number not found') };
      if (req.method === 'GET') return { status: 200, body: { data: this.record(owned.number, owned.state) } };
      if (req.method === 'PATCH') {
        const connection = (req.body as { connection_id?: unknown } | null)?.connection_id;
        if (typeof connection === 'string' || connection === null) owned.state.connectionId = connection;
        return { status: 200, body: { data: this.record(owned.number, owned.state) } };
      }
      if (req.method === 'DELETE') {
        this.numbers.release(owned.number.phoneNumber);
        return { status: 200, body: { data: { ...this.record(owned.number, owned.state), status: 'deleted' } } };
      }
    }
    if (req.method === 'GET' && p === '/v2/texml_applications') {
      const name = param(req.query, 'filter[friendly_name]');
      return { status: 200, body: { data: this.texmlApps.filter((a) => name === undefined || a.friendly_name === name).map((a) => ({ record_type: 'texml_application', ...a })), meta: { page_number: 1, page_size: 20, total_pages: 1, total_results: this.texmlApps.length } } };
    }
    if (req.method === 'POST' && p === '/v2/texml_applications') return this.createTexmlApp(req);
    return { status: 404, body: this.errorBody(404) };
  }

  private search(req: SimRequest): SimReply {
    const country = param(req.query, 'filter[country_code]');
    if (!country) return { status: 422, body: { errors: [{ code: '10015', title: 'Invalid value', detail: 'filter[country_code] is required', source: { parameter: 'filter[country_code]' } }] } };
    const type = param(req.query, 'filter[phone_number_type]') ?? 'local';
    const pattern = (anchor: 'start' | 'end' | 'anywhere', name: string) => {
      const v = param(req.query, `filter[phone_number][${name}]`);
      return v ? { digits: v, anchor } : undefined;
    };
    const found = this.numbers.search({
      country,
      tollFree: type === 'toll_free',
      areaCode: param(req.query, 'filter[national_destination_code]'),
      pattern: pattern('start', 'starts_with') ?? pattern('anywhere', 'contains') ?? pattern('end', 'ends_with'),
      locality: param(req.query, 'filter[locality]'),
      region: param(req.query, 'filter[administrative_area]'),
      capabilities: params(req.query, 'filter[features][]').concat(params(req.query, 'filter[features]')),
      limit: Number(param(req.query, 'filter[limit]') ?? 50) || 50,
    });
    return {
      status: 200,
      body: {
        data: found.map((n) => ({
          record_type: 'available_phone_number',
          phone_number: n.phoneNumber,
          vanity_format: '',
          best_effort: false,
          quickship: true,
          reservable: true,
          region_information: [
            { region_type: 'country_code', region_name: n.country },
            ...(n.rateCenter ? [{ region_type: 'rate_center', region_name: n.rateCenter }] : []),
            ...(n.region ? [{ region_type: 'state', region_name: n.region }] : []),
            ...(n.locality ? [{ region_type: 'location', region_name: n.locality }] : []),
          ],
          cost_information: { upfront_cost: n.monthlyUsd.toFixed(2), monthly_cost: n.monthlyUsd.toFixed(2), currency: 'USD' },
          features: n.capabilities.map((name) => ({ name })),
        })),
        metadata: { total_results: found.length, best_effort_results: 0 },
      },
    };
  }

  private order(req: SimRequest): SimReply {
    const body = req.body as { phone_numbers?: { phone_number?: unknown }[]; connection_id?: unknown; customer_reference?: unknown } | null;
    const wanted = (body?.phone_numbers ?? []).map((p) => p.phone_number);
    if (wanted.length === 0 || !wanted.every((w): w is string => typeof w === 'string')) return { status: 422, body: { errors: [{ code: '10015', title: 'Invalid value', detail: 'phone_numbers must list at least one phone_number', source: { pointer: '/phone_numbers' } }] } };
    const gone = wanted.find((w) => !this.numbers.isAvailable(w));
    // Error code for a number no longer for sale: unconfirmed.
    if (gone) return { status: 422, body: { errors: [{ code: '85001', title: 'Number not available', detail: `${gone} is not available for purchase.`, source: { pointer: '/phone_numbers/0/phone_number' } }] } };
    const connectionId = typeof body?.connection_id === 'string' ? body.connection_id : null;
    const customerReference = typeof body?.customer_reference === 'string' ? body.customer_reference : null;
    const entries = wanted.map((w) => {
      const state: TelnyxSimOwned = { id: this.numberId(), orderEntryId: this.uuid(), connectionId, customerReference };
      const n = this.numbers.buy(w, state)!;
      return { id: state.orderEntryId, record_type: 'number_order_phone_number', phone_number: w, phone_number_type: n.tollFree ? 'toll_free' : 'local', country_code: n.country, status: 'success', requirements_met: true, regulatory_requirements: [] };
    });
    const now = new Date().toISOString();
    return {
      status: 200,
      body: { data: { id: this.uuid(), record_type: 'number_order', phone_numbers: entries, phone_numbers_count: entries.length, connection_id: connectionId, customer_reference: customerReference, requirements_met: true, status: 'success', created_at: now, updated_at: now } },
    };
  }

  private list(req: SimRequest): SimReply {
    const wanted = param(req.query, 'filter[phone_number]');
    const rows = this.numbers.ownedNumbers().filter((o) => wanted === undefined || o.number.phoneNumber === wanted);
    return { status: 200, body: { data: rows.map((o) => this.record(o.number, o.state)), meta: { page_number: 1, page_size: 20, total_pages: 1, total_results: rows.length } } };
  }

  private createTexmlApp(req: SimRequest): SimReply {
    const b = req.body as Record<string, unknown> | null;
    if (typeof b?.friendly_name !== 'string' || typeof b.voice_url !== 'string') return { status: 422, body: { errors: [{ code: '10015', title: 'Invalid value', detail: 'friendly_name and voice_url are required' }] } };
    const app: TelnyxSimTexmlApp = { id: this.numberId(), friendly_name: b.friendly_name, voice_url: b.voice_url, voice_method: typeof b.voice_method === 'string' ? b.voice_method : 'post', status_callback: typeof b.status_callback === 'string' ? b.status_callback : null };
    this.texmlApps.push(app);
    return { status: 201, body: { data: { record_type: 'texml_application', ...app } } };
  }

  private record(n: SimNumber, s: TelnyxSimOwned): object {
    return { id: s.id, record_type: 'phone_number', phone_number: n.phoneNumber, status: 'active', connection_id: s.connectionId, messaging_profile_id: null, customer_reference: s.customerReference, tags: [] };
  }

  private numberId(): string {
    return String(1293384261075731000n + BigInt(this.seq++));
  }

  private uuid(): string {
    const hex = (this.seq++).toString(16).padStart(12, '0');
    return `5a1e0000-0000-4000-8000-${hex}`;
  }
}
