/**
 * The carriers' number adapters as the rest of the control plane sees them: one wrapped
 * {@link TelephonyProvider} per carrier, and whether each is configured.
 */
import { AppError } from '@vap/shared';
import type { ControlPlaneConfig } from '../../../config.js';
import { startCarrierSimulators } from './simulators.js';
import { TelnyxNumbers } from './telnyx/numbers.js';
import { TwilioNumbers } from './twilio/numbers.js';
import type { TelephonyProvider, TelephonyProviderName } from './types.js';
import { VonageNumbers } from './vonage/numbers.js';
import { withTelephonyRetry } from './with-telephony-retry.js';
import type { TelephonyErrorCounter, TelephonyRetryOptions } from './with-telephony-retry.js';

export type { TelephonyErrorCounter } from './with-telephony-retry.js';
export { DEFAULT_TELEPHONY_TIMEOUT_MS } from './with-telephony-retry.js';

/** The carriers' REST endpoints and credentials (`config.carrierApis`). */
export type CarrierApisConfig = ControlPlaneConfig['carrierApis'];

/** Whether a carrier can be called, and how. */
export type CarrierStatus =
  | { configured: true; simulated: boolean; baseUrl: string }
  /** `missing`: the environment variables to set (validate-connection names them). */
  | { configured: false; missing: string[] };

/** The three carriers, wrapped (timeout, safe retries, error counter). */
export interface TelephonyProviders {
  /** Every carrier; an unconfigured one throws `AppError('unavailable')` naming the variables to set. */
  providers: Record<TelephonyProviderName, TelephonyProvider>;
  /** The same adapters with one attempt per call (timeout and error counting kept): a connection probe must make exactly one lookup. */
  probes: Record<TelephonyProviderName, TelephonyProvider>;
  status: Record<TelephonyProviderName, CarrierStatus>;
  /** Per-attempt timeout of carrier calls (ms). */
  timeoutMs: number;
}

/** Printable carrier names (problem details, validate-connection). */
export const CARRIER_TITLES: Record<TelephonyProviderName, string> = { twilio: 'Twilio', telnyx: 'Telnyx', vonage: 'Vonage' };

/**
 * The adapters for `config`: a carrier whose credentials are set is live (on its base URL,
 * a simulator's in tests), one without is "not configured". No simulator is started here;
 * {@link startTelephonyProviders} does that for sandbox mode.
 */
export function createTelephonyProviders(config: CarrierApisConfig, deps: { errors: TelephonyErrorCounter; retry?: Omit<TelephonyRetryOptions, 'errors'>; simulated?: readonly TelephonyProviderName[] }): TelephonyProviders {
  const retry: TelephonyRetryOptions = { timeoutMs: config.timeoutMs, ...deps.retry, errors: deps.errors };
  const simulated = new Set(deps.simulated ?? []);
  const { twilio, telnyx, vonage } = config;
  const adapters: Record<TelephonyProviderName, { adapter: TelephonyProvider; baseUrl: string } | string[]> = {
    twilio:
      twilio.accountSid && twilio.authToken
        ? { adapter: new TwilioNumbers({ accountSid: twilio.accountSid, authToken: twilio.authToken, baseUrl: twilio.apiBaseUrl, pricingBaseUrl: twilio.pricingBaseUrl }), baseUrl: twilio.apiBaseUrl }
        : [...(twilio.accountSid ? [] : ['TWILIO_ACCOUNT_SID']), ...(twilio.authToken ? [] : ['TWILIO_AUTH_TOKEN'])],
    telnyx: telnyx.apiKey ? { adapter: new TelnyxNumbers({ apiKey: telnyx.apiKey, baseUrl: telnyx.apiBaseUrl, connectionId: telnyx.connectionId }), baseUrl: telnyx.apiBaseUrl } : ['TELNYX_API_KEY'],
    vonage:
      vonage.apiKey && vonage.apiSecret
        ? { adapter: new VonageNumbers({ apiKey: vonage.apiKey, apiSecret: vonage.apiSecret, baseUrl: vonage.apiBaseUrl, applicationsBaseUrl: vonage.applicationsBaseUrl, applicationId: vonage.applicationId }), baseUrl: vonage.apiBaseUrl }
        : [...(vonage.apiKey ? [] : ['VONAGE_API_KEY']), ...(vonage.apiSecret ? [] : ['VONAGE_API_SECRET'])],
  };
  const providers = {} as Record<TelephonyProviderName, TelephonyProvider>;
  const probes = {} as Record<TelephonyProviderName, TelephonyProvider>;
  const status = {} as Record<TelephonyProviderName, CarrierStatus>;
  for (const name of ['twilio', 'telnyx', 'vonage'] as const) {
    const a = adapters[name];
    if (Array.isArray(a)) {
      providers[name] = probes[name] = notConfigured(name, a);
      status[name] = { configured: false, missing: a };
    } else {
      providers[name] = withTelephonyRetry(a.adapter, retry);
      probes[name] = withTelephonyRetry(a.adapter, { ...retry, maxAttempts: 1 });
      status[name] = { configured: true, simulated: simulated.has(name), baseUrl: a.baseUrl };
    }
  }
  return { providers, probes, status, timeoutMs: retry.timeoutMs! };
}

/**
 * The control plane's carriers: {@link createTelephonyProviders} of the configuration, except
 * that in development a carrier without credentials runs on a simulator started here on
 * loopback (sandbox mode, like the OpenAI simulator). Production without credentials: not
 * configured. `close()` stops the simulators.
 */
export async function startTelephonyProviders(config: Pick<ControlPlaneConfig, 'appEnv' | 'carrierApis'>, deps: { errors: TelephonyErrorCounter }): Promise<TelephonyProviders & { describe(): string; close(): Promise<void> }> {
  let apis = config.carrierApis;
  const live = createTelephonyProviders(apis, deps);
  const missing = (['twilio', 'telnyx', 'vonage'] as const).filter((n) => !live.status[n].configured);
  if (config.appEnv !== 'development' || missing.length === 0) return { ...live, describe: () => describe(live), close: async () => undefined };
  const sims = await startCarrierSimulators();
  for (const name of missing) apis = { ...apis, [name]: { ...sims.config[name] } };
  const result = createTelephonyProviders(apis, { ...deps, simulated: missing });
  return { ...result, describe: () => describe(result), close: () => sims.close() };
}

function describe(t: TelephonyProviders): string {
  return (['twilio', 'telnyx', 'vonage'] as const)
    .map((n) => {
      const s = t.status[n];
      return `${n}: ${!s.configured ? 'not configured' : s.simulated ? `simulated (${s.baseUrl})` : 'live'}`;
    })
    .join(', ');
}

function notConfigured(name: TelephonyProviderName, missing: string[]): TelephonyProvider {
  const fail = async (): Promise<never> => {
    throw new AppError('unavailable', `${CARRIER_TITLES[name]} is not configured: set ${missing.join(' and ')}.`);
  };
  return { name, searchNumbers: fail, provisionNumber: fail, releaseNumber: fail, getPricing: fail, findOwnedNumber: fail };
}
