import { xmlEscape } from '../telephony/inbound-answer.js';

const XML_PROLOG = '<?xml version="1.0" encoding="UTF-8"?>';

/**
 * Messaging TwiML (reference/telephony-twilio.md §5): `<Response><Message>text</Message></Response>`
 * sends `text` back to the sender from the number that received the message; null is the
 * empty `<Response/>`, which sends nothing.
 */
export function messageTwiml(text: string | null): string {
  return text === null ? `${XML_PROLOG}<Response/>` : `${XML_PROLOG}<Response><Message>${xmlEscape(text)}</Message></Response>`;
}
