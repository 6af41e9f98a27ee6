import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SecretBox } from '../../secret-box.js';

/** The call a stream token vouches for. */
export interface StreamTokenClaims {
  provider: string;
  tenantId: string;
  agentId: string;
  /** The carrier's call id (Telnyx `call_control_id`). */
  callSid: string;
}

/** How long after the voice webhook's answer its stream may start (clock skew between control planes included). */
export const STREAM_TOKEN_MAX_AGE_S = 600;
const VERSION = 'st1';

/**
 * A media stream's proof that the platform routed it. A Telnyx TeXML stream opens its
 * WebSocket without any signature (reference/telephony-telnyx.md §2: only Call Control's
 * `stream_auth_token` would add one), so without this anyone who learned an agent's and a
 * tenant's ids could open a stream to a gateway and have the agent talk, on the tenant's
 * providers and bill. The answer to Telnyx's signed voice webhook carries
 * `streamToken` = `st1.<issued, unix s>.<HMAC-SHA256 of provider, tenant, agent, call id and
 * issue time>` as a `<Parameter>`; the gateway passes it on in `call.prepare`, and the control
 * plane takes a Telnyx call only with a valid, fresh one. The key is derived from the
 * platform's secret key (SECRET_ENCRYPTION_KEY), which every control plane shares; gateways
 * never hold it.
 */
export class StreamTokens {
  private readonly key: Buffer;

  constructor(
    secrets: SecretBox,
    private readonly now: () => number = Date.now,
  ) {
    this.key = secrets.derive('vap media-stream token v1');
  }

  mint(claims: StreamTokenClaims): string {
    const issued = Math.floor(this.now() / 1000);
    return `${VERSION}.${issued}.${this.mac(claims, issued).toString('base64url')}`;
  }

  /** Why `token` does not vouch for `claims` now, or null when it does. */
  check(token: string | undefined, claims: StreamTokenClaims): 'missing' | 'malformed' | 'expired' | 'mismatch' | null {
    if (token === undefined || token === '') return 'missing';
    const [version, issuedText, macText, extra] = token.split('.');
    if (version !== VERSION || !issuedText || !/^\d{1,12}$/.test(issuedText) || !macText || extra !== undefined) return 'malformed';
    const given = Buffer.from(macText, 'base64url');
    const issued = Number(issuedText);
    const expected = this.mac(claims, issued);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'mismatch';
    if (Math.abs(this.now() / 1000 - issued) > STREAM_TOKEN_MAX_AGE_S) return 'expired';
    return null;
  }

  private mac(c: StreamTokenClaims, issued: number): Buffer {
    // JSON keeps the fields apart whatever characters they hold.
    return createHmac('sha256', this.key).update(JSON.stringify([VERSION, c.provider, c.tenantId, c.agentId, c.callSid, issued])).digest();
  }
}
