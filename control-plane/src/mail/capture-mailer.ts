import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { MailMessage, Mailer } from './mailer.js';

/** A message the {@link CaptureMailer} kept. */
export interface CapturedMail extends MailMessage {
  from: string;
  /** The `.eml` file it was written to. */
  file: string;
  at: Date;
}

/** Messages kept in memory; older ones remain only as files, so a long-running server does not grow. */
export const CAPTURE_MEMORY_LIMIT = 200;

/**
 * The mailer when no SMTP server is configured (one-machine mode, tests): each message is
 * composed exactly as SMTP would send it and written as an `.eml` file under `directory`
 * (open it in any mail client), and the last {@link CAPTURE_MEMORY_LIMIT} are kept in
 * memory so a test can read them. The log line names the file only: the message may hold
 * a secret link.
 */
export class CaptureMailer implements Mailer {
  /** The messages sent (the newest {@link CAPTURE_MEMORY_LIMIT}), oldest first. */
  readonly messages: CapturedMail[] = [];
  private readonly composer: Transporter;

  constructor(private readonly opts: { directory: string; from: string; log: Logger }) {
    this.composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  }

  async send(message: MailMessage): Promise<void> {
    const info = (await this.composer.sendMail({ from: this.opts.from, to: message.to, subject: message.subject, text: message.text, ...(message.html !== undefined ? { html: message.html } : {}) })) as { message: Buffer };
    await mkdir(this.opts.directory, { recursive: true });
    const at = new Date();
    // Time first so a directory listing is in sending order; random part so names never collide.
    const file = join(this.opts.directory, `${at.toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`);
    await writeFile(file, info.message, { mode: 0o600 });
    this.messages.push({ ...message, from: this.opts.from, file, at });
    if (this.messages.length > CAPTURE_MEMORY_LIMIT) this.messages.splice(0, this.messages.length - CAPTURE_MEMORY_LIMIT);
    this.opts.log.info({ file }, `mail captured to ${file}`);
  }

  /** The newest message to `to` (case-insensitive), if any. */
  lastTo(to: string): CapturedMail | undefined {
    const want = to.toLowerCase();
    for (let i = this.messages.length - 1; i >= 0; i--) if (this.messages[i]!.to.toLowerCase() === want) return this.messages[i];
    return undefined;
  }

  async close(): Promise<void> {}

  describe(): string {
    return `capture:${this.opts.directory}`;
  }
}
