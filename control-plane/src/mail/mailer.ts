/** One outgoing email. `text` is always sent; `html` is an optional alternative part. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/**
 * Sends email: an outbound side effect kept behind this interface so the SMTP server is
 * configuration ({@link SmtpMailer}) and development and tests capture mail locally
 * ({@link CaptureMailer}). `send` resolves once the message was handed over (accepted by
 * the SMTP server, or written to disk) and rejects when it was not.
 */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** Releases connections; no sends afterwards. */
  close(): Promise<void>;
  /** For the start-up log line: `smtp://host:port` (no credentials) or `capture:<dir>`. */
  describe(): string;
}
