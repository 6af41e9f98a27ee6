import { pino } from 'pino';
import type { Logger } from 'pino';
import { quietOnHangup } from '@vap/shared';

/** Paths pino removes from every log line: secrets and personal data (STYLE.md §8). */
export const REDACT_PATHS = ['pii', 'pii.*', 'req.headers.authorization', 'headers.authorization', '*.apiKey', '*.password', 'key', 'apiKey', 'password'];

/** The one root logger of a process, on stdout (quiet once its terminal is gone: `quietOnHangup`); modules get children of it. */
export function createLogger(level: string, name: string): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, quietOnHangup(pino.destination({ dest: 1 })));
}
