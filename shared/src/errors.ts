/**
 * The one catalogue of problem types (RFC 7807). Each slug is served as a page at
 * `<docs_url>/errors/<slug>`; `description` is what that page says.
 */
export const ERROR_CATALOGUE = {
  'malformed-request': { status: 400, title: 'Malformed request', description: 'The body is not valid JSON, or the request is missing something it must carry (a required parameter or body field). `errors` names the missing fields where there are any.' },
  'unauthorized': { status: 401, title: 'Unauthorized', description: 'The Authorization header is missing, malformed, or carries a credential that is unknown, revoked or expired. Send `Authorization: Bearer <api key or access token>`.' },
  'invalid-credentials': { status: 401, title: 'Invalid email or password', description: 'The login was refused: the email is unknown, the password is wrong, the account is deactivated or has no password yet. All of these answer the same way on purpose, so the answer does not reveal which accounts exist. Repeated failures lock the login for a while (see `account-locked`).' },
  'invalid-token': { status: 401, title: 'Invalid or expired token', description: 'The refresh token is unknown, expired, already used, or its session has ended (logout, deactivation). Using a refresh token a second time ends its whole session, because one of the two holders is not the user. Log in again.' },
  'mfa-failed': { status: 401, title: 'Second factor refused', description: 'The second login step failed: the code is wrong, was already used (a TOTP code works once; so does each recovery code), or the security key\'s answer did not verify (origin, RP ID, challenge, signature or signature counter). The same answer when the `mfaToken` is unknown, expired (5 minutes), already completed or out of attempts (5 per token); then log in again with the password.' },
  'forbidden': { status: 403, title: 'Forbidden', description: 'The credential is valid but lacks the scope or permission this operation requires. The operation\'s required scope is listed in the OpenAPI document (`x-required-scope`).' },
  'recent-login-required': { status: 403, title: 'Recent login required', description: 'Removing a second factor or replacing the recovery codes needs a login of at most 15 minutes ago, so a stolen access token or a long-refreshed session cannot switch MFA off. Log in again (password and second factor) and retry with the new access token.' },
  'not-found': { status: 404, title: 'Not found', description: 'The resource does not exist, or belongs to another account. Both answer the same way on purpose.' },
  'conversation-not-found': { status: 404, title: 'Conversation not found', description: 'No conversation with this id exists in your account. A conversation of another account answers the same way on purpose. Conversations are created when a call starts and are kept when their agent is deleted.' },
  'recording-not-found': { status: 404, title: 'Recording not found', description: 'The conversation has no recording: its agent did not record calls, the recording failed, or it was deleted when its retention (`recording.storageRetentionDays`) ran out. Also the answer to a recording link whose recording is gone.' },
  'recording-link-invalid': { status: 403, title: 'Recording link invalid or expired', description: 'A recording link works for one hour and only as issued: its signature does not match (the URL was changed) or its `expires` time has passed. Ask `GET /api/v1/conversations/{id}/recording` for a new link.' },
  'route-not-found': { status: 404, title: 'Route not found', description: 'No operation exists at this method and path. See /api/v1/openapi.json for the list.' },
  'analysis-not-found': { status: 404, title: 'Analysis not found', description: 'The conversation has no AI analysis and will not get one: analysis was not enabled for its agent (`analysisConfig.enabled`) when the call ran, the caller said nothing to analyse, the call ended without its end record, or the analysis failed for good after its retries. The `detail` says which. While an analysis is still pending or running the answer is 409 `invalid-state`.' },
  'conflict': { status: 409, title: 'Conflict', description: 'The request conflicts with the current state of a resource, for example a duplicate name.' },
  'invalid-state': { status: 409, title: 'Invalid state', description: 'The operation is not allowed in the resource\'s current state (for example deactivating an agent that was never activated).' },
  'invitation-invalid': { status: 400, title: 'Invitation not valid', description: 'The invitation token is unknown (check that the whole link was copied), was already used (sign in instead), or the invitation was revoked. The `detail` says which. Ask for a new invitation.' },
  'invitation-expired': { status: 410, title: 'Invitation expired', description: 'The invitation link is older than its 7 days. Ask an administrator of the account to send a new invitation.' },
  'idempotency-key-in-use': { status: 409, title: 'Idempotent request in progress', description: 'A request with this Idempotency-Key is still being processed. Retry after it has finished to receive its stored response.' },
  'idempotency-key-reused': { status: 422, title: 'Idempotency key reused', description: 'This Idempotency-Key was already used within the last 24 hours with a different request (method, path or body). Use a new key for a new request.' },
  'request-timeout': { status: 408, title: 'Request timeout', description: 'The request did not arrive in full within the server\'s request timeout (headers and body). Nothing was done; send it again.' },
  'headers-too-large': { status: 431, title: 'Request headers too large', description: 'The request line and headers together exceed 16 KiB (Node.js\'s limit), usually a very long query string or cookie. Nothing was done; shorten them.' },
  'payload-too-large': { status: 413, title: 'Payload too large', description: 'The request body exceeds the size this endpoint accepts.' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type', description: 'The Content-Type is not accepted by this endpoint. JSON bodies need `Content-Type: application/json`.' },
  'validation': { status: 422, title: 'Validation failed', description: 'The JSON is well formed but breaks a rule. `errors` lists each problem as `{field, message}`, with `field` a dotted path such as `voice.provider` and `message` stating the rule.' },
  'account-locked': { status: 429, title: 'Login temporarily locked', description: 'Too many failed logins for this account or from this address: logins are refused, even with the right password, until the time in `Retry-After` (seconds) has passed. Unknown emails lock the same way, so a lock says nothing about whether an account exists.' },
  'rate-limited': { status: 429, title: 'Too many requests', description: 'The rate limit of the account\'s plan was exceeded. Wait for the number of seconds in `Retry-After`; the `X-RateLimit-*` headers show the limit and when the window resets.' },
  'internal': { status: 500, title: 'Internal server error', description: 'An unexpected error. Nothing about its cause is shown; quote the `traceId` to support.' },
  'unavailable': { status: 503, title: 'Service unavailable', description: 'A dependency is temporarily unavailable. Retry with backoff.' },
  'carrier-error': { status: 502, title: 'Carrier request failed', description: 'The telephony carrier (Twilio, Vonage or Telnyx) refused the request or answered it with an error that retrying will not fix (for example the number is no longer available, or the platform\'s carrier credentials were refused). `detail` names the carrier and its HTTP status. Nothing was changed: no number was bought, released or stored. A carrier that is only temporarily unreachable answers 503 `unavailable` instead.' },
} as const satisfies Record<string, { status: number; title: string; description: string }>;

export type ErrorSlug = keyof typeof ERROR_CATALOGUE;

/** One problem with one input field; `field` is a dotted path (`voice.provider`, `tags.2`). */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * An error the API reports to its caller. Thrown anywhere below the routes; the one error
 * handler renders it as `application/problem+json`.
 */
export class AppError extends Error {
  readonly slug: ErrorSlug;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(slug: ErrorSlug, detail?: string, opts: { errors?: FieldError[]; headers?: Record<string, string>; cause?: unknown } = {}) {
    super(detail ?? ERROR_CATALOGUE[slug].title, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.slug = slug;
    this.status = ERROR_CATALOGUE[slug].status;
    this.errors = opts.errors;
    this.headers = opts.headers;
  }
}

/** Shorthand for a 422 naming one field. */
export function validationError(field: string, message: string): AppError {
  return new AppError('validation', `${field}: ${message}`, { errors: [{ field, message }] });
}
