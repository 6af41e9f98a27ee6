/**
 * The carriers' number-management REST APIs behind one interface (issue #9): search,
 * provision, release, pricing, and the lookup the admin repair tool needs. One adapter per
 * carrier (`twilio/numbers.ts`, `telnyx/numbers.ts`, `vonage/numbers.ts`), each with a
 * protocol-faithful simulator (`<carrier>/simulator.ts`). Retries and the
 * `svc.telephony.api_errors` counter are one wrapper around this interface, not in adapters.
 */

export type TelephonyProviderName = 'twilio' | 'telnyx' | 'vonage';

export type NumberCapability = 'voice' | 'sms' | 'mms';

/** What `GET /telephony/numbers/search` asks a carrier for. */
export interface NumberSearchQuery {
  /** ISO 3166-1 alpha-2, upper case. */
  country: string;
  /** Digits only (national area code, `415`). */
  areaCode?: string;
  /** Digits (or letters, which carriers map to keypad digits) the number must contain. */
  contains?: string;
  /** Every listed capability must be present. */
  capabilities?: NumberCapability[];
  /** true: toll-free only; false: local only; undefined: local (carriers' default). */
  tollFree?: boolean;
  /** 1..50. */
  limit: number;
}

/** One number a carrier offers (spec "Search result item", minus `provider`, which the caller adds). */
export interface AvailableNumber {
  /** E.164. */
  phoneNumber: string;
  country: string;
  region: string | null;
  locality: string | null;
  capabilities: NumberCapability[];
  tollFree: boolean;
  monthlyCostUsd: number;
}

/** Buy `phoneNumber` and point its inbound calls (and messages) at the platform. */
export interface ProvisionRequest {
  /** E.164. */
  phoneNumber: string;
  /** ISO 3166-1 alpha-2 of the number (Vonage's buy call needs it); default: from the calling code (+1 → US, +44 → GB…). */
  country?: string;
  friendlyName?: string;
  /** The platform's inbound voice callback for this carrier (`{PUBLIC_URL}/webhooks/<carrier>/voice…`). */
  voiceWebhookUrl: string;
  /** Call status / event callback, where the carrier has one. */
  statusWebhookUrl?: string;
  /** Inbound SMS callback, where the number can take messages. */
  smsWebhookUrl?: string;
}

/** A number the carrier now holds for us. */
export interface ProvisionedNumber {
  /** The carrier's id for the number (Twilio `PN…`, Telnyx phone-number id, Vonage: the MSISDN). */
  providerSid: string;
  phoneNumber: string;
  country: string;
  capabilities: NumberCapability[];
  monthlyCostUsd: number;
}

export interface RatePrices {
  monthlyCostUsd: number;
  inboundMinuteCostUsd: number;
  outboundMinuteCostUsd: number;
}

/** Spec "Number pricing", minus `provider` (the caller adds it). */
export interface NumberPricing {
  country: string;
  localNumber: RatePrices;
  tollFreeNumber: RatePrices;
}

/**
 * One carrier's number management. Methods throw {@link TelephonyProviderError} on failure.
 * `signal` aborts the HTTP request (the wrapper's timeout uses it).
 */
export interface TelephonyProvider {
  readonly name: TelephonyProviderName;
  searchNumbers(query: NumberSearchQuery, signal?: AbortSignal): Promise<AvailableNumber[]>;
  /** Not idempotent at the carrier: never retried blindly (the wrapper retries only failures that provably did nothing). */
  provisionNumber(request: ProvisionRequest, signal?: AbortSignal): Promise<ProvisionedNumber>;
  /** Idempotent: a number the carrier no longer has resolves without error. */
  releaseNumber(number: { providerSid: string; phoneNumber: string }, signal?: AbortSignal): Promise<void>;
  /** Number and per-minute prices for a country (one authenticated pricing lookup). */
  getPricing(country: string, signal?: AbortSignal): Promise<NumberPricing>;
  /** The carrier's id for a number we hold, by E.164; null when the carrier does not have it on our account. */
  findOwnedNumber(phoneNumber: string, signal?: AbortSignal): Promise<{ providerSid: string } | null>;
}

/** The interface's method names, as the `method` tag of `svc.telephony.api_errors`. */
export type TelephonyMethod = 'searchNumbers' | 'provisionNumber' | 'releaseNumber' | 'getPricing' | 'findOwnedNumber';

/** A carrier REST call that failed. `status` is the carrier's HTTP status, absent for network failures and timeouts. */
export class TelephonyProviderError extends Error {
  readonly provider: TelephonyProviderName;
  readonly method: TelephonyMethod;
  readonly status: number | undefined;
  /** Safe to try again: network failures, timeouts, 408, 429 and 5xx. */
  readonly retryable: boolean;
  /** `timeout`, `network`, `unauthorized` (401), `forbidden` (403), `not-found`, `rejected` (other 4xx), `server` (5xx). */
  readonly code: 'timeout' | 'network' | 'unauthorized' | 'forbidden' | 'not-found' | 'rejected' | 'server';

  constructor(init: { provider: TelephonyProviderName; method: TelephonyMethod; status?: number; code: TelephonyProviderError['code']; message: string; cause?: unknown }) {
    super(init.message, { cause: init.cause });
    this.name = 'TelephonyProviderError';
    this.provider = init.provider;
    this.method = init.method;
    this.status = init.status;
    this.code = init.code;
    this.retryable = init.code === 'timeout' || init.code === 'network' || init.code === 'server' || init.status === 408 || init.status === 429;
  }
}
