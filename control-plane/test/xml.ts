/** An element of a parsed XML document. */
export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decode(raw: string, where: string): string {
  if (/<|&(?!(amp|lt|gt|quot|apos);)/.test(raw)) throw new Error(`Unescaped markup in ${where}: ${raw}`);
  return raw.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => ENTITIES[e]!);
}

/**
 * A small strict XML parser for the TwiML/TeXML the platform emits (no XML library is a
 * dependency): an optional prolog, elements, double-quoted attributes, text, the five
 * predefined entities. Throws on anything malformed (unbalanced tags, raw `&` or `<`),
 * which is what the tests want to catch.
 */
export function parseXml(xml: string): XmlElement {
  let i = 0;
  const prolog = /^<\?xml[^?]*\?>/.exec(xml);
  if (prolog) i = prolog[0].length;
  const root: XmlElement = { name: '#document', attrs: {}, children: [], text: '' };
  const stack: XmlElement[] = [root];
  const tag = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"]*")*)\s*(\/?)>/y;
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    const text = xml.slice(i, lt < 0 ? xml.length : lt);
    if (text.trim() !== '') stack[stack.length - 1]!.text += decode(text, 'text');
    if (lt < 0) break;
    tag.lastIndex = lt;
    const m = tag.exec(xml);
    if (!m) throw new Error(`Malformed tag at ${lt}: ${xml.slice(lt, lt + 40)}`);
    const [whole, closing, name, attrText, selfClosing] = m as unknown as [string, string, string, string, string];
    if (closing) {
      const open = stack.pop();
      if (!open || open.name !== name || stack.length === 0) throw new Error(`Unexpected </${name}>`);
    } else {
      const attrs: Record<string, string> = {};
      for (const a of attrText.matchAll(/([A-Za-z_][\w.-]*)="([^"]*)"/g)) {
        if (a[1]! in attrs) throw new Error(`Duplicate attribute ${a[1]}`);
        attrs[a[1]!] = decode(a[2]!, `attribute ${a[1]}`);
      }
      const el: XmlElement = { name, attrs, children: [], text: '' };
      stack[stack.length - 1]!.children.push(el);
      if (!selfClosing) stack.push(el);
    }
    i = lt + whole.length;
  }
  if (stack.length !== 1 || root.children.length !== 1) throw new Error('Unbalanced document or not exactly one root element');
  return root.children[0]!;
}

/** The first child element called `name`, or throws. */
export function child(el: XmlElement, name: string): XmlElement {
  const found = el.children.find((c) => c.name === name);
  if (!found) throw new Error(`<${el.name}> has no <${name}>`);
  return found;
}
