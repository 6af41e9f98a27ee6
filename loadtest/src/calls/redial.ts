/**
 * How long a bench caller slot waits before dialling again after its call failed to connect:
 * a person redials after a pause rather than hammering a struggling server, and a call the
 * gateway refused (503) goes elsewhere for the `Retry-After` it gave, as a load balancer
 * reading `/readyz` would send it, rather than straight back.
 */
import { StreamRefusedError } from '@vap/media-gateway/simulators';

/** Pause before redialling after a failed call, ms. */
export const REDIAL_AFTER_FAILURE_MS = 1000;
/** Caps the wait a refusal's `Retry-After` asks for, so a slot dials again within the run. */
export const MAX_RETRY_AFTER_MS = 30_000;

/** True for the gateway's refusal of a new call (HTTP 503 at the stream's upgrade). */
export function isRefusal(err: unknown): err is StreamRefusedError {
  return err instanceof StreamRefusedError && err.status === 503;
}

/** The wait, ms, before the slot's next dial after `err` ended its dial. */
export function redialAfterMs(err: unknown): number {
  const retryAfterMs = isRefusal(err) && err.retryAfterS !== null ? Math.min(err.retryAfterS * 1000, MAX_RETRY_AFTER_MS) : 0;
  return Math.max(REDIAL_AFTER_FAILURE_MS, retryAfterMs);
}
