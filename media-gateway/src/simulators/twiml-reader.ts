/**
 * Reads the little TwiML (or Telnyx TeXML, the same vocabulary: reference/telephony-telnyx.md
 * §1) a voice webhook answers with (reference/telephony-twilio.md §1), the way the carrier
 * would act on it: `<Connect><Stream url>` with `<Parameter>`s opens a
 * media stream; `<Say>` and `<Hangup/>` / `<Reject/>` end the call. Pure, no XML
 * dependency: the vocabulary is small and attribute values are plain strings.
 */

/** What the simulated caller does with the webhook's answer. */
export type TwimlAction =
  | { kind: 'stream'; url: string; name: string | undefined; customParameters: Record<string, string>; say: string | undefined; attributes: Record<string, string> }
  | { kind: 'end'; say: string | undefined };

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML character and entity references → text. */
export function decodeXmlText(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return ENTITIES[ref] ?? whole;
  });
}

function attributes(tagBody: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tagBody.matchAll(/([A-Za-z_:][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) out[m[1]!] = decodeXmlText(m[2] ?? m[3] ?? '');
  return out;
}

/**
 * The action of a TwiML document, or throws when it has neither a stream nor an ending
 * (the simulator has nothing faithful to do with `<Gather>`, `<Dial>`, … yet).
 */
export function readTwiml(twiml: string): TwimlAction {
  const xml = twiml.replace(/<!--[\s\S]*?-->/g, '');
  if (!/<Response\b/.test(xml)) throw new Error('TwiML without <Response>');
  const say = /<Say\b[^>]*>([\s\S]*?)<\/Say>/.exec(xml)?.[1];
  const sayText = say === undefined ? undefined : decodeXmlText(say).trim();
  const connect = /<Connect\b[^>]*>([\s\S]*?)<\/Connect>/.exec(xml);
  if (connect) {
    const stream = /<Stream\b([^>]*?)(\/>|>([\s\S]*?)<\/Stream>)/.exec(connect[1]!);
    if (!stream) throw new Error('<Connect> without <Stream>');
    const attrs = attributes(stream[1]!);
    if (!attrs.url) throw new Error('<Stream> without url');
    const customParameters: Record<string, string> = {};
    for (const p of (stream[3] ?? '').matchAll(/<Parameter\b([^>]*?)\/?>/g)) {
      const a = attributes(p[1]!);
      if (a.name !== undefined) customParameters[a.name] = a.value ?? '';
    }
    // A <Say> before <Connect> is played first; one after it only once the stream closed.
    const sayBefore = say !== undefined && xml.indexOf('<Say') < xml.indexOf('<Connect') ? sayText : undefined;
    // `attributes`: all of the <Stream>'s, e.g. Telnyx's bidirectionalMode/Codec/SamplingRate.
    return { kind: 'stream', url: attrs.url, name: attrs.name, customParameters, say: sayBefore, attributes: attrs };
  }
  if (/<(Hangup|Reject)\b[^>]*\/?>/.test(xml) || sayText !== undefined) return { kind: 'end', say: sayText };
  throw new Error('TwiML the simulated caller cannot follow');
}
