import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** How long a recording link works (spec: "pre-signed, valid 1 hour"). */
export const RECORDING_LINK_TTL_SECONDS = 3600;

/** The formats a recording is stored in, with the content type it is served as. */
export const RECORDING_CONTENT_TYPES = { mp3: 'audio/mpeg', wav: 'audio/wav' } as const;
export type RecordingFormat = keyof typeof RECORDING_CONTENT_TYPES;

/**
 * Signs and checks the links to recordings in the local store:
 * `<publicUrl>/recordings/<conversationId>.<ext>?expires=<unix s>&sig=<base64url>`, where
 * `sig` is HMAC-SHA256 over conversation, format and expiry. The HMAC key is derived (HKDF)
 * from the control plane's secret key under its own label, so it is shared by every replica
 * and never equals the key that encrypts provider secrets.
 */
export class RecordingLinks {
  private readonly key: Buffer;

  constructor(
    secretKey: Buffer,
    private readonly publicUrl: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'vap recording links v1', 32));
  }

  /** A link to the recording that works until `expiresAtSec` (unix seconds). */
  url(conversationId: string, format: RecordingFormat, expiresAtSec: number): string {
    const q = new URLSearchParams({ expires: String(expiresAtSec), sig: this.sign(conversationId, format, expiresAtSec) });
    return `${this.publicUrl}/recordings/${encodeURIComponent(conversationId)}.${format}?${q.toString()}`;
  }

  /** Whether `sig` is this installation's signature of the link (compared in constant time). */
  verify(conversationId: string, format: RecordingFormat, expiresAtSec: number, sig: string): boolean {
    // Compared as text: base64url decoding ignores stray characters and unused bits, so two
    // different strings could decode to the same bytes.
    const expected = Buffer.from(this.sign(conversationId, format, expiresAtSec), 'utf8');
    const given = Buffer.from(sig, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private sign(conversationId: string, format: RecordingFormat, expiresAtSec: number): string {
    return createHmac('sha256', this.key).update(`recording\n${conversationId}\n${format}\n${expiresAtSec}`).digest('base64url');
  }
}
