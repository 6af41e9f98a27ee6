import { createHash, timingSafeEqual } from 'node:crypto';
import type { onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '@vap/shared';

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * `onRequest` hook of the admin server: `Authorization: Bearer <admin token>`. No
 * credential is a 401; any other credential (a tenant API key, a user token, a wrong
 * token) is a 403, because the admin API knows only its own token. The comparison is of
 * SHA-256 digests in constant time, so neither the token's bytes nor its length leak.
 */
export function adminAuth(token: string): onRequestAsyncHookHandler {
  const expected = digest(token);
  return async (req) => {
    const header = req.headers.authorization;
    if (!header || header.trim() === '') throw new AppError('unauthorized', 'Missing Authorization header; send "Authorization: Bearer <admin token>".');
    const given = /^Bearer +(\S+)\s*$/i.exec(header)?.[1] ?? '';
    if (!timingSafeEqual(digest(given), expected)) {
      throw new AppError('forbidden', 'These credentials do not grant admin access; the admin API accepts only the admin token (ADMIN_TOKEN).');
    }
  };
}
