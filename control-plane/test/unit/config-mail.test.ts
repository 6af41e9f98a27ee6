import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration of outgoing mail', () => {
  it('defaults to capturing mail (no SMTP server) from a no-reply sender', () => {
    expect(loadConfig({}).mail).toEqual({ smtpUrl: undefined, from: 'Voice Agent Platform <no-reply@localhost>' });
  });

  it('reads SMTP_URL and MAIL_FROM', () => {
    expect(loadConfig({ SMTP_URL: 'smtps://u:p@mail.example.com:465', MAIL_FROM: 'Acme <no-reply@acme.test>' }).mail).toEqual({ smtpUrl: 'smtps://u:p@mail.example.com:465', from: 'Acme <no-reply@acme.test>' });
  });

  it('names bad values without echoing them', () => {
    let err: unknown;
    try {
      loadConfig({ SMTP_URL: 'http://u:hunter2@mail.example.com', MAIL_FROM: 'nobody' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(['MAIL_FROM', 'SMTP_URL']);
    expect(problems.join('\n')).not.toContain('hunter2');
  });
});
