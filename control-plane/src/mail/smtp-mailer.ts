import nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import type { MailMessage, Mailer } from './mailer.js';

/**
 * Sends through an SMTP server (nodemailer) given as a URL: `smtp://user:pass@host:587`
 * (STARTTLS when the server offers it) or `smtps://…:465` (TLS from the start).
 * Connections are pooled, so a burst of invitations reuses a few connections.
 */
export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;
  private readonly where: string;

  constructor(opts: { url: string; from: string }) {
    const u = new URL(opts.url);
    // Credentials stay out of describe() and therefore out of logs.
    this.where = `${u.protocol}//${u.host}`;
    this.transport = nodemailer.createTransport({ url: opts.url, pool: true }, { from: opts.from });
  }

  async send(message: MailMessage): Promise<void> {
    await this.transport.sendMail({ to: message.to, subject: message.subject, text: message.text, ...(message.html !== undefined ? { html: message.html } : {}) });
  }

  async close(): Promise<void> {
    this.transport.close();
  }

  describe(): string {
    return this.where;
  }
}
