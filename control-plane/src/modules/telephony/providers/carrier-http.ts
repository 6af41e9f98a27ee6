/**
 * The one HTTP call the number adapters make: `fetch`, the carrier's answer parsed, and every
 * failure turned into a {@link TelephonyProviderError} with the contract's codes.
 */
import { TelephonyProviderError } from './types.js';
import type { TelephonyMethod, TelephonyProviderName } from './types.js';

/** One carrier REST request. */
export interface CarrierRequest {
  provider: TelephonyProviderName;
  method: TelephonyMethod;
  httpMethod: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  /** Form (`URLSearchParams`) or JSON (object) body. */
  body?: URLSearchParams | object;
  signal?: AbortSignal | undefined;
  /** Statuses returned to the caller instead of thrown (e.g. 404 on a release). */
  accept?: readonly number[];
  /** The carrier's message in its error body, for the error text. */
  describeError: (body: unknown) => string | undefined;
}

/** A carrier's answer: status and parsed JSON body (null when empty or not JSON). */
export interface CarrierResponse {
  status: number;
  body: unknown;
}

/** HTTP Basic `Authorization` header value. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** Sends `req`; resolves for 2xx and `accept`ed statuses, throws {@link TelephonyProviderError} otherwise. */
export async function carrierRequest(req: CarrierRequest): Promise<CarrierResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let payload: string | undefined;
  if (req.body instanceof URLSearchParams) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    payload = req.body.toString();
  } else if (req.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(req.body);
  }
  let res: Response;
  let text: string;
  try {
    res = await fetch(req.url, { method: req.httpMethod, headers, body: payload, signal: req.signal ?? null });
    text = await res.text();
  } catch (err) {
    throw transportError(req, err);
  }
  const body = parseJson(text);
  if ((res.status >= 200 && res.status < 300) || req.accept?.includes(res.status)) return { status: res.status, body };
  const carrierSays = req.describeError(body);
  throw new TelephonyProviderError({
    provider: req.provider,
    method: req.method,
    status: res.status,
    code: statusCode(res.status),
    message: `${req.provider} ${req.method}: HTTP ${res.status}${carrierSays ? ` (${carrierSays})` : ''}`,
  });
}

function statusCode(status: number): TelephonyProviderError['code'] {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not-found';
  if (status >= 500) return 'server';
  return 'rejected';
}

function transportError(req: CarrierRequest, err: unknown): TelephonyProviderError {
  const aborted = req.signal?.aborted === true;
  return new TelephonyProviderError({
    provider: req.provider,
    method: req.method,
    code: aborted ? 'timeout' : 'network',
    message: aborted ? `${req.provider} ${req.method}: request aborted` : `${req.provider} ${req.method}: ${networkReason(err)}`,
    cause: err,
  });
}

/** The system error code under a failed fetch (`ECONNREFUSED`, `ECONNRESET`…), if any. */
export function networkErrorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function networkReason(err: unknown): string {
  return networkErrorCode(err) ?? (err instanceof Error ? err.message : 'network failure');
}

function parseJson(text: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** A price string (`"1.15"`) or number as a number; NaN-safe (0 when absent or garbage). */
export function price(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number.parseFloat(v) : Number.NaN;
  return Number.isFinite(n) ? n : 0;
}

/** Fails a call whose 2xx answer lacks what the adapter needs (a carrier changed its format). */
export function badAnswer(provider: TelephonyProviderName, method: TelephonyMethod, what: string): TelephonyProviderError {
  return new TelephonyProviderError({ provider, method, code: 'server', message: `${provider} ${method}: unexpected answer (${what})` });
}
