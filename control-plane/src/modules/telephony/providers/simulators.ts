/**
 * The carrier number simulators, for tests, sandbox mode and other modules' tests:
 * `startCarrierSimulators()` starts all three on loopback and returns a `carrierApis`
 * configuration pointing at them, ready for `createTelephonyProviders`.
 */
import type { ControlPlaneConfig } from '../../../config.js';
import { TelnyxNumbersSimulator } from './telnyx/simulator.js';
import { TwilioNumbersSimulator } from './twilio/simulator.js';
import { VONAGE_SIM_APPLICATION_ID, VonageNumbersSimulator } from './vonage/simulator.js';

export { CarrierSimServer } from './carrier-sim-server.js';
export type { CarrierSimRequest, SimAuth } from './carrier-sim-server.js';
export { SIM_CARRIER_SLICES, SIM_RATES, SimNumberBook, defaultSimInventory } from './sim-inventory.js';
export type { SimNumber } from './sim-inventory.js';
export { TWILIO_SIM_ACCOUNT_SID, TWILIO_SIM_AUTH_TOKEN, TwilioNumbersSimulator } from './twilio/simulator.js';
export type { TwilioSimOwned } from './twilio/simulator.js';
export { TELNYX_SIM_API_KEY, TelnyxNumbersSimulator } from './telnyx/simulator.js';
export type { TelnyxSimOwned, TelnyxSimTexmlApp } from './telnyx/simulator.js';
export { VONAGE_SIM_API_KEY, VONAGE_SIM_API_SECRET, VONAGE_SIM_APPLICATION_ID, VonageNumbersSimulator } from './vonage/simulator.js';
export type { VonageSimApplication, VonageSimOwned } from './vonage/simulator.js';

/** Three running simulators and the configuration that reaches them. */
export interface CarrierSimulators {
  twilio: TwilioNumbersSimulator;
  telnyx: TelnyxNumbersSimulator;
  vonage: VonageNumbersSimulator;
  /** Base URLs and credentials of the three (the simulators' current credentials, at start). */
  config: ControlPlaneConfig['carrierApis'];
  close(): Promise<void>;
}

/** Starts the Twilio, Telnyx and Vonage number simulators on 127.0.0.1 (ephemeral ports). */
export async function startCarrierSimulators(opts: { timeoutMs?: number } = {}): Promise<CarrierSimulators> {
  const [twilio, telnyx, vonage] = await Promise.all([TwilioNumbersSimulator.start(), TelnyxNumbersSimulator.start(), VonageNumbersSimulator.start()]);
  return {
    twilio,
    telnyx,
    vonage,
    config: {
      twilio: { accountSid: twilio.accountSid, authToken: twilio.authToken, apiBaseUrl: twilio.url, pricingBaseUrl: twilio.url },
      telnyx: { apiKey: telnyx.apiKey, apiBaseUrl: telnyx.apiBaseUrl, connectionId: undefined },
      vonage: { apiKey: vonage.apiKey, apiSecret: vonage.apiSecret, apiBaseUrl: vonage.url, applicationsBaseUrl: vonage.url, applicationId: VONAGE_SIM_APPLICATION_ID },
      timeoutMs: opts.timeoutMs ?? 8_000,
    },
    close: async () => {
      await Promise.all([twilio.close(), telnyx.close(), vonage.close()]);
    },
  };
}
