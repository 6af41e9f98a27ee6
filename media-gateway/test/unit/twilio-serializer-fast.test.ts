/**
 * The `indexOf` fast paths of the serializer against JSON.parse + the zod schemas, over many
 * generated messages: canonical ones, reordered, with odd values (escapes, control
 * characters, unicode, non-strings), duplicates, whitespace, and random byte mutations.
 */
import { describe, expect, it } from 'vitest';
import { OTHER_STREAM, OTHER_TRACK, inboundMediaMessage, mediaMessage, parseGatewayMessage, readInboundMediaBytes } from '../../src/twilio/serializer.js';
import { twilioInboundSchema, twilioOutboundSchema } from '../../src/twilio/wire.js';

/** mulberry32: a seeded generator, so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ODD_STRINGS = ['', 'a"b', 'back\\slash', 'tab\there', 'line\nbreak', 'ünïcödé', '😀', '\u0000', '\u001f', '\u2028', '}', '{', ',', ':', '"media"', 'media', 'event'];

function gen(r: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number): boolean => r() < p;
  const b64 = (): string => Buffer.from(Array.from({ length: Math.floor(r() * 200) }, () => Math.floor(r() * 256))).toString('base64');
  const str = (): string => (chance(0.8) ? `MZ${Math.floor(r() * 1e9).toString(16)}` : pick(ODD_STRINGS));
  const value = (): unknown => (chance(0.85) ? str() : pick<unknown>([1, null, true, [], {}, ['x'], 0.5]));
  return { pick, chance, b64, str, value };
}

function shuffle<T>(r: () => number, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** An inbound message as text: mostly media-like, in any field order, sometimes odd. */
function inboundText(r: () => number): string {
  const g = gen(r);
  const media: [string, unknown][] = [];
  if (g.chance(0.9)) media.push(['payload', g.chance(0.9) ? g.b64() : g.value()]);
  if (g.chance(0.7)) media.push(['track', g.chance(0.7) ? g.pick(['inbound', 'outbound']) : g.value()]);
  if (g.chance(0.7)) media.push(['chunk', g.chance(0.9) ? String(Math.floor(r() * 1000)) : g.value()]);
  if (g.chance(0.7)) media.push(['timestamp', g.chance(0.9) ? String(Math.floor(r() * 1e6)) : g.value()]);
  if (g.chance(0.1)) media.push([g.pick(['extra', 'media', 'event', 'payload', 'track']), g.value()]);
  const top: [string, unknown][] = [];
  if (g.chance(0.7)) top.push(['sequenceNumber', g.chance(0.9) ? String(Math.floor(r() * 1000)) : g.value()]);
  if (g.chance(0.95)) top.push(['streamSid', g.chance(0.9) ? 'MZabc' : g.value()]);
  if (g.chance(0.95)) top.push(['media', g.chance(0.95) ? null : g.value()]);
  if (g.chance(0.1)) top.push([g.pick(['extra', 'streamSid', 'event', 'sequenceNumber', 'media']), g.value()]);
  shuffle(r, media);
  shuffle(r, top);
  const event = g.chance(0.9) ? 'media' : g.pick(['dtmf', 'mark', 'stop', 'Media', '']);
  const members = (pairs: [string, unknown][], inner?: string): string[] => pairs.map(([k, v]) => `${JSON.stringify(k)}:${v === null && inner !== undefined ? inner : JSON.stringify(v)}`);
  const mediaText = `{${members(media).join(',')}}`;
  const all = [`"event":${JSON.stringify(event)}`, ...members(top, mediaText)];
  if (g.chance(0.1)) shuffle(r, all);
  let text = `{${all.join(g.chance(0.05) ? ', ' : ',')}}`;
  if (g.chance(0.05)) text = JSON.stringify(JSON.parse(text), null, 2);
  if (g.chance(0.03)) text += g.pick([' ', 'x', '}', '\n']);
  return text;
}

/** Replace, insert or delete a few characters. */
function mutate(r: () => number, text: string): string {
  const chars = '{}[]":,\\ abcmediapyloadtrkinb0123456789\u0001\u00e9';
  let t = text;
  const n = 1 + Math.floor(r() * 3);
  for (let k = 0; k < n; k++) {
    const at = Math.floor(r() * (t.length + 1));
    const c = chars[Math.floor(r() * chars.length)]!;
    const op = r();
    t = op < 0.4 ? t.slice(0, at) + c + t.slice(at + 1) : op < 0.7 ? t.slice(0, at) + c + t.slice(at) : t.slice(0, at) + t.slice(at + 1);
  }
  return t;
}

/** The reference: JSON.parse + the schema, reduced to what the gateway reads. */
function reference(text: string): { streamSid: string; track: string; payload: string } | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = twilioInboundSchema.safeParse(value);
  if (!parsed.success || parsed.data.event !== 'media') return null;
  const m = parsed.data;
  return { streamSid: m.streamSid, track: m.media.track, payload: m.media.payload };
}

describe('readInboundMediaBytes', () => {
  /** What the leg does with a message of stream `sid` by the reference: its audio, or why not. */
  function expected(text: string, sid: string): Buffer | typeof OTHER_STREAM | typeof OTHER_TRACK | null {
    const ref = reference(text);
    if (!ref) return null;
    if (ref.streamSid !== sid) return OTHER_STREAM;
    if (ref.track !== 'inbound') return OTHER_TRACK;
    return Buffer.from(ref.payload, 'base64');
  }

  it('agrees with JSON.parse + the schema wherever it answers, over 30k generated and mutated messages as bytes', () => {
    const r = rng(5);
    let answered = 0;
    let audioByReference = 0;
    const outcomes = new Set<string>();
    for (let n = 0; n < 15_000; n++) {
      const base = inboundText(r);
      for (const text of [base, mutate(r, base)]) {
        const sid = r() < 0.8 ? 'MZabc' : 'MZother';
        const want = expected(text, sid);
        if (Buffer.isBuffer(want)) audioByReference++;
        const got = readInboundMediaBytes(Buffer.from(text, 'utf8'), Buffer.from(sid, 'utf8'));
        if (got === null) continue;
        answered++;
        outcomes.add(Buffer.isBuffer(got) ? 'audio' : got);
        expect(got, text).toEqual(want);
      }
    }
    // Not vacuous: most messages with audio take this path, and every outcome occurs.
    expect(audioByReference).toBeGreaterThan(3_000);
    expect(answered).toBeGreaterThan(audioByReference / 2);
    expect([...outcomes].sort()).toEqual(['audio', OTHER_STREAM, OTHER_TRACK].sort());
  });

  it('decodes the canonical layouts, and leaves escapes, duplicates, whitespace, non-ASCII and loose base64 to the text path', () => {
    const sid = Buffer.from('MZ1');
    const mulaw = Uint8Array.from({ length: 160 }, (_, i) => (i * 37) & 0xff);
    const payload = Buffer.from(mulaw).toString('base64');
    const sim = inboundMediaMessage({ sequenceNumber: 3, streamSid: 'MZ1', chunk: 2, timestampMs: 20, mulaw });
    const twilio = `{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"2","timestamp":"20","payload":"${payload}"},"streamSid":"MZ1"}`;
    for (const text of [sim, twilio]) expect([...(readInboundMediaBytes(Buffer.from(text), sid) as Buffer)]).toEqual([...mulaw]);
    for (const [payloadText, bytes] of [['', []], ['AA==', [0]], ['AAE=', [0, 1]], ['AAEC', [0, 1, 2]]] as const) {
      expect([...(readInboundMediaBytes(Buffer.from(`{"event":"media","streamSid":"MZ1","media":{"payload":"${payloadText}"}}`), sid) as Buffer)]).toEqual(bytes);
    }
    expect(readInboundMediaBytes(Buffer.from('{"event":"media","streamSid":"MZ2","media":{"payload":"AA=="}}'), sid)).toBe(OTHER_STREAM);
    expect(readInboundMediaBytes(Buffer.from('{"event":"media","streamSid":"MZ1","media":{"track":"outbound","payload":"AA=="}}'), sid)).toBe(OTHER_TRACK);
    const odd = [
      '{"event":"media","streamSid":"MZ\\u0031","media":{"payload":"AA=="}}',
      '{"event":"media","streamSid":"MZ1","streamSid":"MZ2","media":{"payload":"AA=="}}',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"AA==","payload":"AQ=="}}',
      '{"event":"media","event":"dtmf","streamSid":"MZ1","media":{"payload":"AA=="}}',
      '{"event":"media", "streamSid":"MZ1","media":{"payload":"AA=="}}',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"AA==","chunk":1}}',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"AA=="}} ',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"AA=="},"media":{"payload":"AQ=="}}',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"AA"}}',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"A A="}}',
      '{"event":"media","streamSid":"MZ1","media":{"payload":"AA=A"}}',
      '{"event":"media","streamSid":"MZ1","media":{"track":"inbound","chunk":"é","payload":"AA=="}}',
      '{"event":"media","streamSid":"MZ2","media":{"payload":"A\u0001A="}}',
      '{"event":"media","streamSid":"MZ1","media":{"track":"outbound","payload":"AA\\"}}',
      '{"event":"media","streamSid":"MZ1"',
      '{"event":"media",',
      '{"event":"medi',
    ];
    for (const text of odd) expect(readInboundMediaBytes(Buffer.from(text), sid), text).toBeNull();
  });
});

describe('parseGatewayMessage fast path', () => {
  function strict(text: string): unknown {
    try {
      const parsed = twilioOutboundSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  it('equals JSON.parse + the strict schema over generated and mutated gateway messages', () => {
    const r = rng(7);
    const g = gen(r);
    let valid = 0;
    for (let n = 0; n < 8_000; n++) {
      const sid = g.str();
      const payload = g.chance(0.9) ? g.b64() : g.str();
      const base = g.chance(0.8) ? mediaMessage(sid, Buffer.from(payload, 'base64')) : `{"event":"media","streamSid":${JSON.stringify(sid)},"media":{"payload":${JSON.stringify(payload)}}}`;
      for (const text of [base, mutate(r, base)]) {
        const expected = strict(text);
        if (expected) valid++;
        expect(parseGatewayMessage(text), text).toEqual(expected);
      }
    }
    expect(valid).toBeGreaterThan(6_000);
  });

  it('still rejects an extra field (31951) through the strict schema', () => {
    const reasons: string[] = [];
    expect(parseGatewayMessage('{"event":"media","streamSid":"MZ1","media":{"payload":"AA==","x":"1"}}', (r) => reasons.push(r))).toBeNull();
    expect(reasons).toEqual(['invalid-shape']);
  });
});

describe('inboundMediaMessage', () => {
  it('writes the text JSON.stringify gives', () => {
    const r = rng(11);
    const g = gen(r);
    for (let n = 0; n < 2000; n++) {
      const f = { sequenceNumber: Math.floor(r() * 1e6), streamSid: g.str(), chunk: Math.floor(r() * 1e6), timestampMs: r() * 1e7, mulaw: Buffer.from(g.b64(), 'base64'), ...(g.chance(0.3) ? { track: g.str() } : {}) };
      const expected = JSON.stringify({
        event: 'media',
        sequenceNumber: String(f.sequenceNumber),
        streamSid: f.streamSid,
        media: { track: f.track ?? 'inbound', chunk: String(f.chunk), timestamp: String(Math.round(f.timestampMs)), payload: Buffer.from(f.mulaw).toString('base64') },
      });
      expect(inboundMediaMessage(f)).toBe(expected);
    }
  });
});
