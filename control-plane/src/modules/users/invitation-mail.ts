import type { MailMessage } from '../../mail/mailer.js';

/** What the invitation email says; `link` carries the secret token. */
export interface InvitationMailInput {
  to: string;
  firstName: string;
  inviterName: string | null;
  tenantName: string;
  role: string;
  message: string | null;
  link: string;
  token: string;
  expiresAt: Date;
}

/**
 * The invitation email, plain text only: the inviter's message is quoted as typed and
 * never interpreted as markup. The token is given on its own line too, for clients that
 * break long links.
 */
export function invitationMail(i: InvitationMailInput): MailMessage {
  const who = i.inviterName ? `${i.inviterName} has` : 'You have been';
  const lines = [
    `Hello ${i.firstName},`,
    '',
    `${who} invited ${i.inviterName ? 'you ' : ''}to join ${i.tenantName} on the Voice Agent Platform as ${i.role}.`,
  ];
  if (i.message) lines.push('', 'Their message:', ...i.message.split(/\r?\n/).map((l) => `> ${l}`));
  lines.push(
    '',
    'To accept, choose a password here:',
    i.link,
    '',
    `The link works once and expires on ${i.expiresAt.toISOString()}.`,
    '',
    'If your client cannot open the link, give this invitation token to POST /api/v1/auth/invitations/accept:',
    i.token,
    '',
    'If you did not expect this invitation, ignore this email.',
  );
  return { to: i.to, subject: `You are invited to ${i.tenantName} on the Voice Agent Platform`, text: lines.join('\n') };
}
