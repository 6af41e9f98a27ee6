import type { TelephonyProviders } from '../modules/telephony/providers/index.js';
import { networkErrorCode } from '../modules/telephony/providers/carrier-http.js';
import { TelephonyProviderError } from '../modules/telephony/providers/types.js';
import type { TelephonyProviderName } from '../modules/telephony/providers/types.js';
import { PROVIDER_NAMES } from './schemas.js';
import type { ProviderName } from './schemas.js';

/** What `validate-connection` answers (spec "Telephony debug"): always 200, `success` says how it went. */
export interface ConnectionProbeResult {
  provider: ProviderName;
  success: boolean;
  probeCountry: string;
  detail: string;
}

/**
 * The spec's credentials probe: one authenticated pricing lookup for `country` on the
 * carrier, without retries, and a `detail` an operator can act on: the variables to set,
 * `Unauthorized`/401, `Forbidden`/403, an HTTP timeout, or the carrier's status.
 */
export async function probeConnection(telephony: TelephonyProviders, provider: TelephonyProviderName, country: string): Promise<ConnectionProbeResult> {
  const title = PROVIDER_NAMES[provider];
  const result = (success: boolean, detail: string): ConnectionProbeResult => ({ provider: title, success, probeCountry: country, detail });
  const status = telephony.status[provider];
  if (!status.configured) return result(false, `${title} is not configured: set ${status.missing.join(' and ')}.`);
  try {
    const pricing = await telephony.probes[provider].getPricing(country);
    const where = status.simulated ? ` (sandbox simulator at ${status.baseUrl})` : '';
    return result(true, `Authenticated: ${title} answered a pricing lookup for ${country}${where}; a local number costs ${pricing.localNumber.monthlyCostUsd} USD a month.`);
  } catch (err) {
    return result(false, failureDetail(title, err, telephony.timeoutMs));
  }
}

function failureDetail(title: string, err: unknown, timeoutMs: number): string {
  if (!(err instanceof TelephonyProviderError)) return `The pricing lookup on ${title} failed unexpectedly.`;
  switch (err.code) {
    case 'unauthorized':
      return `Unauthorized (401): ${title} refused the credentials.`;
    case 'forbidden':
      return `Forbidden (403): ${title} accepted the credentials but refused the pricing lookup.`;
    case 'timeout':
      return `HTTP timeout: ${title} did not answer the pricing lookup, timed out after ${timeoutMs} ms.`;
    case 'network':
      return `Network error: ${title} could not be reached (${networkErrorCode(err.cause) ?? 'connection failed'}).`;
    default:
      return err.status !== undefined ? `${title} answered the pricing lookup with HTTP ${err.status}.` : `${title} gave an unexpected answer to the pricing lookup.`;
  }
}
