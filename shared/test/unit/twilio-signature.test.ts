import { describe, expect, it } from 'vitest';
import { computeTwilioSignature, twilioBodySha256, twilioSignaturePayload, twilioUrlVariants, validateTwilioSignature } from '../../src/twilio-signature.js';

// The four verified vectors of reference/telephony-twilio.md §3.
const LIB = {
  token: '12345',
  url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
  params: { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' },
  signature: 'RSOYDt4T1cUTdK1PDd93/VVr8B8=',
};
const LIB_JSON = {
  body: '{"property": "value", "boolean": true}',
  hash: '0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620',
  signature: 'a9nBmqA0ju/hNViExpshrM61xv4=',
};
const VOICE = {
  token: 'test_auth_token_0000000000000000',
  url: 'https://example.com/twilio/voice',
  params: {
    AccountSid: 'AC00000000000000000000000000000001',
    ApiVersion: '2010-04-01',
    CallSid: 'CA00000000000000000000000000000001',
    CallStatus: 'ringing',
    Direction: 'inbound',
    From: '+15551230001',
    To: '+15551230002',
  },
  payload:
    'https://example.com/twilio/voiceAccountSidAC00000000000000000000000000000001ApiVersion2010-04-01CallSidCA00000000000000000000000000000001CallStatusringingDirectioninboundFrom+15551230001To+15551230002',
  signature: 'lgMdfAZ2IR1NSJtQgl6d9Tu+WvM=',
};
const JSON_VARIANT = {
  body: '{"event":"example"}',
  url: 'https://example.com/twilio/json?bodySHA256=d4bc1a032de1a9172c458eac0e060db438c1aae9f50c71140d5731642e937ff3',
  signature: 'Tg5bzE9mIBWw2B17pRy8HJolB8U=',
};

describe('Twilio request signature: reference vectors', () => {
  it('signs the form POST library vector', () => {
    expect(computeTwilioSignature(LIB.token, LIB.url, LIB.params)).toBe(LIB.signature);
    expect(validateTwilioSignature({ authToken: LIB.token, url: LIB.url, params: LIB.params, signature: LIB.signature })).toBe(true);
  });

  it('signs the JSON-body library vector and checks the body hash', () => {
    expect(twilioBodySha256(LIB_JSON.body)).toBe(LIB_JSON.hash);
    const url = `${LIB.url}&bodySHA256=${LIB_JSON.hash}`;
    expect(computeTwilioSignature(LIB.token, url)).toBe(LIB_JSON.signature);
    expect(validateTwilioSignature({ authToken: LIB.token, url, rawBody: LIB_JSON.body, signature: LIB_JSON.signature })).toBe(true);
  });

  it('builds the documented string to sign for the voice webhook vector', () => {
    expect(twilioSignaturePayload(VOICE.url, VOICE.params)).toBe(VOICE.payload);
    expect(computeTwilioSignature(VOICE.token, VOICE.url, VOICE.params)).toBe(VOICE.signature);
    expect(validateTwilioSignature({ authToken: VOICE.token, url: VOICE.url, params: VOICE.params, signature: VOICE.signature })).toBe(true);
  });

  it('signs the JSON variant vector over the URL alone', () => {
    expect(computeTwilioSignature(VOICE.token, JSON_VARIANT.url)).toBe(JSON_VARIANT.signature);
    expect(validateTwilioSignature({ authToken: VOICE.token, url: JSON_VARIANT.url, rawBody: Buffer.from(JSON_VARIANT.body), signature: JSON_VARIANT.signature })).toBe(true);
  });
});

describe('Twilio request signature: refusals', () => {
  const ok = { authToken: VOICE.token, url: VOICE.url, params: VOICE.params, signature: VOICE.signature };

  it('refuses a changed parameter value, an added parameter and a dropped parameter', () => {
    expect(validateTwilioSignature({ ...ok, params: { ...VOICE.params, To: '+15551230003' } })).toBe(false);
    expect(validateTwilioSignature({ ...ok, params: { ...VOICE.params, Extra: 'x' } })).toBe(false);
    const { From: _dropped, ...fewer } = VOICE.params;
    expect(validateTwilioSignature({ ...ok, params: fewer })).toBe(false);
  });

  it('refuses another URL, another token, a missing or altered signature', () => {
    expect(validateTwilioSignature({ ...ok, url: 'https://example.com/twilio/voice?x=1' })).toBe(false);
    expect(validateTwilioSignature({ ...ok, url: 'http://example.com/twilio/voice' })).toBe(false);
    expect(validateTwilioSignature({ ...ok, authToken: 'another_token' })).toBe(false);
    expect(validateTwilioSignature({ ...ok, authToken: '' })).toBe(false);
    expect(validateTwilioSignature({ ...ok, signature: undefined })).toBe(false);
    expect(validateTwilioSignature({ ...ok, signature: '' })).toBe(false);
    expect(validateTwilioSignature({ ...ok, signature: VOICE.signature.replace('l', 'L') })).toBe(false);
    expect(validateTwilioSignature({ ...ok, signature: `${VOICE.signature}=` })).toBe(false);
  });

  it('refuses a JSON body that does not match bodySHA256, or a missing body', () => {
    const base = { authToken: VOICE.token, url: JSON_VARIANT.url, signature: JSON_VARIANT.signature };
    expect(validateTwilioSignature({ ...base, rawBody: '{"event":"tampered"}' })).toBe(false);
    expect(validateTwilioSignature(base)).toBe(false);
  });

  it('refuses a JSON-variant URL whose hash was swapped for the tampered body', () => {
    const tampered = '{"event":"tampered"}';
    const url = `https://example.com/twilio/json?bodySHA256=${twilioBodySha256(tampered)}`;
    expect(validateTwilioSignature({ authToken: VOICE.token, url, rawBody: tampered, signature: JSON_VARIANT.signature })).toBe(false);
  });
});

describe('Twilio request signature: tolerance and parameter order', () => {
  it('accepts a signature made over the URL with or without the default port', () => {
    const withPort = 'https://example.com:443/twilio/voice';
    const sigWithPort = computeTwilioSignature(VOICE.token, withPort, VOICE.params);
    expect(validateTwilioSignature({ authToken: VOICE.token, url: VOICE.url, params: VOICE.params, signature: sigWithPort })).toBe(true);
    expect(validateTwilioSignature({ authToken: VOICE.token, url: withPort, params: VOICE.params, signature: VOICE.signature })).toBe(true);
  });

  it('lists the port variants without re-encoding the path or query', () => {
    expect(twilioUrlVariants('https://h.example/p%20q?a=b c')).toEqual(['https://h.example/p%20q?a=b c', 'https://h.example:443/p%20q?a=b c']);
    expect(twilioUrlVariants('wss://gw.example:8443/s')).toEqual(['wss://gw.example:8443/s', 'wss://gw.example/s']);
    expect(twilioUrlVariants('http://127.0.0.1/x')).toEqual(['http://127.0.0.1/x', 'http://127.0.0.1:80/x']);
  });

  it('signs a wss:// URL for the media-stream upgrade (no parameters)', () => {
    const url = 'wss://gw.example.com/api/v1/webhooks/twilio/media-stream';
    const sig = computeTwilioSignature(VOICE.token, url);
    expect(validateTwilioSignature({ authToken: VOICE.token, url, signature: sig })).toBe(true);
    expect(validateTwilioSignature({ authToken: VOICE.token, url: 'wss://gw.example.com:443/api/v1/webhooks/twilio/media-stream', signature: sig })).toBe(true);
  });

  it('sorts names byte-wise and a repeated name once per distinct value, values sorted', () => {
    expect(twilioSignaturePayload('u', { b: '2', B: '1', a: ['z', 'y', 'z'] })).toBe('uB1ay' + 'az' + 'b2');
    const sig = computeTwilioSignature('t', 'u', { a: ['z', 'y'] });
    expect(validateTwilioSignature({ authToken: 't', url: 'u', params: { a: ['y', 'z', 'y'] }, signature: sig })).toBe(true);
  });
});
