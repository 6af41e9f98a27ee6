/**
 * The deterministic number stock behind the carrier simulators: numbers in fictional ranges
 * (NANP 555-01xx, Ofcom's drama ranges), US and GB, local and toll-free, with regions,
 * localities, capabilities and prices. Each simulator owns one {@link SimNumberBook}, so
 * buying on the Twilio simulator does not touch the Telnyx one, and each carrier sells its
 * own slice of the ranges ({@link SIM_CARRIER_SLICES}), so a search over every carrier never
 * shows one number as sold by two.
 */
import { keypadDigits } from './numbering-plan.js';
import type { NumberCapability } from './types.js';

/** One number of the stock. */
export interface SimNumber {
  /** E.164. */
  phoneNumber: string;
  country: 'US' | 'GB';
  /** State / nation code (`CA`, `ENG`); null for toll-free. */
  region: string | null;
  locality: string | null;
  /** National destination code the area-code filter matches (`415`, `20`, `800`). */
  areaCode: string;
  rateCenter: string | null;
  tollFree: boolean;
  capabilities: NumberCapability[];
  monthlyUsd: number;
}

/** Per-minute prices of a country (USD). */
export interface SimRates {
  monthlyLocalUsd: number;
  monthlyTollFreeUsd: number;
  inboundLocalUsd: number;
  inboundTollFreeUsd: number;
  outboundUsd: number;
}

/** Prices the simulators answer, per country. */
export const SIM_RATES: Readonly<Record<SimNumber['country'], SimRates>> = Object.freeze({
  US: { monthlyLocalUsd: 1.15, monthlyTollFreeUsd: 2.15, inboundLocalUsd: 0.0085, inboundTollFreeUsd: 0.022, outboundUsd: 0.014 },
  GB: { monthlyLocalUsd: 1.25, monthlyTollFreeUsd: 2.5, inboundLocalUsd: 0.01, inboundTollFreeUsd: 0.06, outboundUsd: 0.0215 },
});

const FULL: NumberCapability[] = ['voice', 'sms', 'mms'];
const VOICE_SMS: NumberCapability[] = ['voice', 'sms'];
const VOICE: NumberCapability[] = ['voice'];

function block(o: { country: SimNumber['country']; prefix: string; areaCode: string; first: number; count: number; region: string | null; locality: string | null; rateCenter: string | null; tollFree: boolean; caps: (i: number) => NumberCapability[] }): SimNumber[] {
  const rates = SIM_RATES[o.country];
  return Array.from({ length: o.count }, (_, i) => ({
    phoneNumber: `${o.prefix}${String(o.first + i).padStart(4, '0')}`,
    country: o.country,
    region: o.region,
    locality: o.locality,
    areaCode: o.areaCode,
    rateCenter: o.rateCenter,
    tollFree: o.tollFree,
    capabilities: o.caps(i),
    monthlyUsd: o.tollFree ? rates.monthlyTollFreeUsd : rates.monthlyLocalUsd,
  }));
}

// Every fourth US local number is voice-only, so capability filters have something to drop.
const usLocal = (i: number) => (i % 4 === 3 ? VOICE : FULL);

/** A carrier whose simulator sells numbers. */
export type SimCarrier = 'twilio' | 'telnyx' | 'vonage';

/**
 * Where each carrier's slice starts: the 4-digit line number of its first US number
 * (NANP 555-0100…0199: 30 apart, blocks hold at most 8) and of its first GB number (Ofcom's
 * 0000…0999 drama ranges: 100 apart). Twilio keeps the historical 0100 / 0010.
 */
export const SIM_CARRIER_SLICES: Readonly<Record<SimCarrier, { us: number; gb: number }>> = Object.freeze({
  twilio: { us: 100, gb: 10 },
  telnyx: { us: 130, gb: 110 },
  vonage: { us: 160, gb: 210 },
});

/** The stock a carrier's simulator starts with (46 numbers, in that carrier's slice). */
export function defaultSimInventory(carrier: SimCarrier = 'twilio'): SimNumber[] {
  const { us, gb } = SIM_CARRIER_SLICES[carrier];
  return [
    ...block({ country: 'US', prefix: '+1415555', areaCode: '415', first: us, count: 8, region: 'CA', locality: 'San Francisco', rateCenter: 'SNFC CA 05', tollFree: false, caps: usLocal }),
    ...block({ country: 'US', prefix: '+1212555', areaCode: '212', first: us, count: 6, region: 'NY', locality: 'New York', rateCenter: 'NWYRCYZN01', tollFree: false, caps: usLocal }),
    ...block({ country: 'US', prefix: '+1312555', areaCode: '312', first: us, count: 6, region: 'IL', locality: 'Chicago', rateCenter: 'CHICAGOZN1', tollFree: false, caps: usLocal }),
    ...block({ country: 'US', prefix: '+1800555', areaCode: '800', first: us, count: 5, region: null, locality: null, rateCenter: null, tollFree: true, caps: () => VOICE_SMS }),
    ...block({ country: 'US', prefix: '+1888555', areaCode: '888', first: us, count: 5, region: null, locality: null, rateCenter: null, tollFree: true, caps: () => VOICE }),
    ...block({ country: 'GB', prefix: '+44207946', areaCode: '20', first: gb, count: 6, region: 'ENG', locality: 'London', rateCenter: null, tollFree: false, caps: (i) => (i % 2 === 0 ? VOICE_SMS : VOICE) }),
    ...block({ country: 'GB', prefix: '+44161496', areaCode: '161', first: gb, count: 5, region: 'ENG', locality: 'Manchester', rateCenter: null, tollFree: false, caps: () => VOICE }),
    ...block({ country: 'GB', prefix: '+44808157', areaCode: '808', first: gb, count: 5, region: null, locality: null, rateCenter: null, tollFree: true, caps: () => VOICE }),
  ];
}

/** Search criteria the simulators translate their carrier's filters into. */
export interface SimSearch {
  country: string;
  tollFree: boolean;
  areaCode?: string | undefined;
  /** A pattern over the E.164 digits: digits, `*` any one digit; `^`/`$` anchors. */
  pattern?: { digits: string; anchor: 'start' | 'end' | 'anywhere' } | undefined;
  locality?: string | undefined;
  region?: string | undefined;
  capabilities?: readonly string[] | undefined;
  limit: number;
}

/** A simulator's stock: what is for sale, what the account owns (with carrier-specific state `T`). */
export class SimNumberBook<T> {
  private readonly available = new Map<string, SimNumber>();
  private readonly owned = new Map<string, { number: SimNumber; state: T }>();

  constructor(stock: SimNumber[] = defaultSimInventory()) {
    for (const n of stock) this.available.set(n.phoneNumber, n);
  }

  /** Numbers for sale matching `q`, in stock order. */
  search(q: SimSearch): SimNumber[] {
    const caps = (q.capabilities ?? []).map((c) => c.toLowerCase());
    const re = q.pattern ? patternRegex(q.pattern) : null;
    const out: SimNumber[] = [];
    for (const n of this.available.values()) {
      if (out.length >= q.limit) break;
      if (n.country !== q.country.toUpperCase() || n.tollFree !== q.tollFree) continue;
      if (q.areaCode !== undefined && n.areaCode !== q.areaCode) continue;
      if (q.locality !== undefined && n.locality?.toLowerCase() !== q.locality.toLowerCase()) continue;
      if (q.region !== undefined && n.region?.toLowerCase() !== q.region.toLowerCase()) continue;
      if (!caps.every((c) => (n.capabilities as string[]).includes(c))) continue;
      if (re && !re.test(n.phoneNumber.slice(1))) continue;
      out.push(n);
    }
    return out;
  }

  /** Moves a number from sale to the account; undefined when it is not for sale. */
  buy(phoneNumber: string, state: T): SimNumber | undefined {
    const n = this.available.get(phoneNumber);
    if (!n) return undefined;
    this.available.delete(phoneNumber);
    this.owned.set(phoneNumber, { number: n, state });
    return n;
  }

  /** An owned number and its state. */
  get(phoneNumber: string): { number: SimNumber; state: T } | undefined {
    return this.owned.get(phoneNumber);
  }

  /** Every owned number. */
  ownedNumbers(): { number: SimNumber; state: T }[] {
    return [...this.owned.values()];
  }

  /** Gives a number back to the stock; false when the account did not own it. */
  release(phoneNumber: string): boolean {
    const entry = this.owned.get(phoneNumber);
    if (!entry) return false;
    this.owned.delete(phoneNumber);
    this.available.set(phoneNumber, entry.number);
    return true;
  }

  /** Whether a number is for sale. */
  isAvailable(phoneNumber: string): boolean {
    return this.available.has(phoneNumber);
  }
}

function patternRegex(p: NonNullable<SimSearch['pattern']>): RegExp {
  const body = keypadDigits(p.digits)
    .replace(/[^0-9*]/g, '')
    .replace(/\*/g, '\\d');
  return new RegExp(p.anchor === 'start' ? `^${body}` : p.anchor === 'end' ? `${body}$` : body);
}
