/**
 * How `pnpm call` dials over each carrier: the call id the carrier would make up, the
 * signature the platform checks (read from the configuration or DATA_DIR, see
 * platform-targets.ts), and the carrier's caller simulator placing the call through the
 * control plane's voice webhook. Every way dialling fails becomes a message the user can act on.
 */
import { randomUUID } from 'node:crypto';
import type { ControlPlaneConfig } from '@vap/control-plane';
import { StreamRefusedError, TelnyxCallerSimulator, TwilioCallerSimulator, VonageCallerSimulator, telnyxCallControlId, twilioSid } from '@vap/media-gateway/simulators';
import { SANDBOX_PHONE_NUMBER } from '../../control-plane/src/modules/telephony/sandbox-receptionist.js';
import { START_HINT, SandboxCallError, telnyxSigning, twilioSigning, vonageSigning } from './platform-targets.js';
import type { CarrierSigning } from './platform-targets.js';

/** The carriers `--carrier` accepts; the first is the default. */
export const CARRIERS = ['twilio', 'telnyx', 'vonage'] as const;
export type Carrier = (typeof CARRIERS)[number];

const NAMES: Record<Carrier, string> = { twilio: 'Twilio', telnyx: 'Telnyx', vonage: 'Vonage' };
/** The variable both the control plane and the gateway must agree on, per carrier (for a refused stream). */
const STREAM_SECRET: Record<Carrier, string | null> = { twilio: 'TWILIO_AUTH_TOKEN', telnyx: null, vonage: 'VONAGE_SIGNATURE_SECRET' };

export function isCarrier(value: string): value is Carrier {
  return (CARRIERS as readonly string[]).includes(value);
}

/** The carrier's display name (`Telnyx`). */
export function carrierName(carrier: Carrier): string {
  return NAMES[carrier];
}

/** What the platform checks a carrier's webhook with, as this command signs it. */
export type Signing = { carrier: 'twilio'; token: string; source: string } | CarrierSigning;

/** The signing secret of `carrier` the platform uses (throws {@link SandboxCallError} when this machine cannot have it). */
export function carrierSigning(carrier: Carrier, config: ControlPlaneConfig): Signing {
  if (carrier === 'telnyx') return telnyxSigning(config);
  if (carrier === 'vonage') return vonageSigning(config);
  return { carrier: 'twilio', ...twilioSigning(config) };
}

/** The id the carrier gives a call, which the gateway and the STT simulator know it by: CallSid, call_control_id or uuid. */
export function newCallSid(carrier: Carrier): string {
  if (carrier === 'telnyx') return telnyxCallControlId();
  if (carrier === 'vonage') return randomUUID();
  return twilioSid('CA');
}

/**
 * Why `--to` is needed off Twilio: the sandbox number belongs to Twilio, and the platform
 * routes a carrier's webhook only to that carrier's numbers.
 */
export function numberNeeded(carrier: Carrier): SandboxCallError {
  const p = carrier;
  return new SandboxCallError(
    `--carrier ${p} needs --to: the sandbox number ${SANDBOX_PHONE_NUMBER} is a Twilio number, and a ${NAMES[p]} call only reaches a ${NAMES[p]} number. ` +
      `Provision one with the tenant API (in development the ${NAMES[p]} number simulator sells fictional numbers): ` +
      `GET /api/v1/telephony/numbers/search?provider=${p}&country=US, POST /api/v1/telephony/numbers {"phoneNumber": "<a number found>", "provider": "${p}"}, ` +
      `then POST /api/v1/telephony/numbers/{numberId}/assign/{agentId}; and call it with --carrier ${p} --to <that number>.`,
  );
}

/** A connected call: the three caller simulators share this surface (MulawCallerSimulator). */
export type DialledCall = TwilioCallerSimulator | TelnyxCallerSimulator | VonageCallerSimulator;

/** Dials through the carrier's voice webhook; turns every way it can fail into a message the user can act on. */
export async function dialCarrier(signing: Signing, o: { controlPlaneUrl: string; from: string; to: string; callSid: string }): Promise<DialledCall> {
  const carrier = signing.carrier;
  let placed: { rejected: true; say: string } | { rejected: false; call: DialledCall };
  try {
    if (signing.carrier === 'telnyx') placed = await TelnyxCallerSimulator.placeCall({ controlPlaneUrl: o.controlPlaneUrl, signingKey: signing.key, from: o.from, to: o.to, callControlId: o.callSid });
    else if (signing.carrier === 'vonage') placed = await VonageCallerSimulator.placeCall({ controlPlaneUrl: o.controlPlaneUrl, signatureSecret: signing.secret, from: o.from, to: o.to, uuid: o.callSid });
    else placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: o.controlPlaneUrl, authToken: signing.token, from: o.from, to: o.to, callSid: o.callSid });
  } catch (err) {
    const message = (err as Error).message;
    if (err instanceof StreamRefusedError) {
      const secret = STREAM_SECRET[carrier];
      throw new SandboxCallError(
        `The media gateway refused the stream (HTTP ${err.status})${err.status === 403 && secret ? `: its ${NAMES[carrier]} secret differs from the control plane's (set the same ${secret} for both, or neither)` : ''}.`,
      );
    }
    if (/HTTP 403/.test(message)) {
      throw new SandboxCallError(
        `The ${NAMES[carrier]} voice webhook refused the call's signature (HTTP 403): this command signed with ${signing.source}, which is not what the platform checks. ` +
          `Run it with the same DATA_DIR and ${carrier === 'twilio' ? 'TWILIO_AUTH_TOKEN' : carrier === 'telnyx' ? 'TELNYX_PUBLIC_KEY' : 'VONAGE_SIGNATURE_SECRET'} as the platform` +
          (carrier === 'twilio' ? ', and PUBLIC_URL equal to the platform\'s (the signature covers that URL).' : '.'),
      );
    }
    if (/HTTP \d+/.test(message)) throw new SandboxCallError(`The ${NAMES[carrier]} voice webhook failed: ${message}`);
    // fetch (the webhook) wraps the socket error in `cause`; ws (the stream) throws it bare.
    const webhookCode = (err as { cause?: { code?: string } }).cause?.code;
    if (webhookCode) throw new SandboxCallError(`The voice webhook at ${o.controlPlaneUrl} did not answer (${webhookCode}): did the platform stop? ${START_HINT}`);
    const code = (err as { code?: string }).code;
    throw new SandboxCallError(`The media stream could not be opened: ${code ?? message}. Is the media gateway reachable at the stream URL the platform hands out (MEDIA_GATEWAY_PUBLIC_URL)?`);
  }
  if (placed.rejected) {
    throw new SandboxCallError(
      `The platform answered ${o.to} with an apology and hung up ("${placed.say}"): no active agent answers this ${NAMES[carrier]} number (unknown number, another carrier's number, no agent assigned, or agent inactive). ` +
        `The sandbox number ${SANDBOX_PHONE_NUMBER} (Twilio) is created on the first start of an empty database in development.`,
    );
  }
  return placed.call;
}
