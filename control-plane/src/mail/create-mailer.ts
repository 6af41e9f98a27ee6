import { join } from 'node:path';
import type { Logger } from 'pino';
import { CaptureMailer } from './capture-mailer.js';
import type { Mailer } from './mailer.js';
import { SmtpMailer } from './smtp-mailer.js';

/** SMTP when `smtpUrl` is set, otherwise a {@link CaptureMailer} writing to `<dataDir>/mail`. */
export function createMailer(mail: { smtpUrl: string | undefined; from: string }, dataDir: string, log: Logger): Mailer {
  if (mail.smtpUrl) return new SmtpMailer({ url: mail.smtpUrl, from: mail.from });
  return new CaptureMailer({ directory: join(dataDir, 'mail'), from: mail.from, log });
}
