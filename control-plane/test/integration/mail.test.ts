import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPTURE_MEMORY_LIMIT, CaptureMailer } from '../../src/mail/capture-mailer.js';
import { createMailer } from '../../src/mail/create-mailer.js';
import { SmtpMailer } from '../../src/mail/smtp-mailer.js';
import { decodeQuotedPrintable, startSmtpSink } from '../smtp-sink.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vap-mail-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

function capturingLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        cb();
      },
    }),
  );
  return { log, lines };
}

describe('SmtpMailer', () => {
  it('delivers to a real SMTP server, authenticating with the URL’s credentials, from MAIL_FROM', async () => {
    const sink = await startSmtpSink({ auth: { user: 'mailer', pass: 's3cret' } });
    const mailer = new SmtpMailer({ url: `smtp://mailer:s3cret@127.0.0.1:${sink.port}`, from: 'Voice Agent Platform <no-reply@example.test>' });
    try {
      expect(mailer.describe()).toBe(`smtp://127.0.0.1:${sink.port}`);
      await mailer.send({ to: 'ada@example.test', subject: 'Hello Ada', text: 'Plain body with a link https://app.example.test/accept?token=abc', html: '<p>HTML body</p>' });
      const [msg] = await sink.waitFor(1);
      expect(msg!.user).toBe('mailer');
      expect(msg!.from).toBe('no-reply@example.test');
      expect(msg!.to).toEqual(['ada@example.test']);
      expect(msg!.raw).toMatch(/^Subject: Hello Ada\r$/m);
      expect(msg!.raw).toMatch(/^From: Voice Agent Platform <no-reply@example\.test>\r$/m);
      expect(msg!.raw).toContain('multipart/alternative');
      expect(decodeQuotedPrintable(msg!.raw)).toContain('https://app.example.test/accept?token=abc');
    } finally {
      await mailer.close();
      await sink.close();
    }
  });

  it('rejects when the server refuses the credentials', async () => {
    const sink = await startSmtpSink({ auth: { user: 'mailer', pass: 's3cret' } });
    const mailer = new SmtpMailer({ url: `smtp://mailer:wrong@127.0.0.1:${sink.port}`, from: 'no-reply@example.test' });
    try {
      await expect(mailer.send({ to: 'ada@example.test', subject: 'x', text: 'y' })).rejects.toThrow();
      expect(sink.received).toHaveLength(0);
    } finally {
      await mailer.close();
      await sink.close();
    }
  });
});

describe('CaptureMailer', () => {
  it('writes each message as an .eml file, keeps it in memory and logs the file without the body', async () => {
    const { log, lines } = capturingLog();
    const mailer = new CaptureMailer({ directory: join(dir, 'capture'), from: 'Voice Agent Platform <no-reply@localhost>', log });
    await mailer.send({ to: 'Grace@Example.test', subject: 'Your invitation', text: 'secret-token-123 inside' });
    await mailer.send({ to: 'other@example.test', subject: 'Other', text: 'x' });

    expect(mailer.messages).toHaveLength(2);
    const got = mailer.lastTo('grace@example.test')!;
    expect(got).toMatchObject({ to: 'Grace@Example.test', subject: 'Your invitation', text: 'secret-token-123 inside', from: 'Voice Agent Platform <no-reply@localhost>' });
    expect(got.file.endsWith('.eml')).toBe(true);
    const eml = await readFile(got.file, 'utf8');
    expect(eml).toMatch(/^To: Grace@example\.test\r$/m);
    expect(eml).toMatch(/^Subject: Your invitation\r$/m);
    expect(eml).toContain('secret-token-123 inside');
    expect((await readdir(join(dir, 'capture'))).filter((f) => f.endsWith('.eml'))).toHaveLength(2);

    expect(lines.map((l) => l.msg)).toEqual([`mail captured to ${got.file}`, `mail captured to ${mailer.messages[1]!.file}`]);
    expect(JSON.stringify(lines)).not.toContain('secret-token-123');
  });

  it('keeps only the newest messages in memory; every one stays on disk', async () => {
    const mailer = new CaptureMailer({ directory: join(dir, 'many'), from: 'a@b.test', log: pino({ level: 'silent' }) });
    for (let i = 0; i < CAPTURE_MEMORY_LIMIT + 5; i++) await mailer.send({ to: `n${i}@example.test`, subject: `#${i}`, text: 'x' });
    expect(mailer.messages).toHaveLength(CAPTURE_MEMORY_LIMIT);
    expect(mailer.messages[0]!.subject).toBe('#5');
    expect(mailer.lastTo('n0@example.test')).toBeUndefined();
    expect((await readdir(join(dir, 'many'))).filter((f) => f.endsWith('.eml'))).toHaveLength(CAPTURE_MEMORY_LIMIT + 5);
  });

  it('is what createMailer builds without SMTP_URL, under DATA_DIR/mail', async () => {
    const m = createMailer({ smtpUrl: undefined, from: 'a@b.test' }, dir, pino({ level: 'silent' }));
    expect(m).toBeInstanceOf(CaptureMailer);
    expect(m.describe()).toBe(`capture:${join(dir, 'mail')}`);
    const s = createMailer({ smtpUrl: 'smtps://u:p@mail.example.test:465', from: 'a@b.test' }, dir, pino({ level: 'silent' }));
    expect(s).toBeInstanceOf(SmtpMailer);
    expect(s.describe()).toBe('smtps://mail.example.test:465');
    await s.close();
  });
});
