import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { KbParseError, type ParsedDocument } from '../types.js';
import { commonPathPrefix, SectionGrouper, type TextUnit } from './sections.js';
import { readTextFile } from './text-decoding.js';

type OrderedNode = Record<string, unknown> & { ':@'?: Record<string, unknown> };

/**
 * XML as `element path: text` lines (`catalog/book[2]/title: XML Developer's Guide`),
 * attributes as `catalog/book[2]/@id: bk102`, in document order; a position `[n]` (1-based)
 * only where an element has same-named siblings. An element's text and attributes stay
 * together; consecutive elements are grouped into sections of about SECTION_TARGET_CHARS
 * whose context is the path of the element enclosing them all (`/catalog/book[2]`).
 * Comments and processing instructions are dropped; entities are expanded within limits.
 * @throws KbParseError `corrupt` (not well-formed), `too_complex` (entity expansion past the limits), `empty`.
 */
export async function parseXml(filePath: string): Promise<ParsedDocument> {
  const xml = await readTextFile(filePath);
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new KbParseError('corrupt', `The file is not well-formed XML: ${valid.err.msg} (line ${valid.err.line}).`);
  }
  const parser = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    trimValues: true,
    parseTagValue: false,
    parseAttributeValue: false,
    // XML's own entities and DOCTYPE ones, within fast-xml-parser's expansion limits (the
    // defaults: 1000 entities, 100 000 expanded characters) so a "billion laughs" file fails.
    processEntities: true,
    htmlEntities: false,
    ignoreDeclaration: true,
    ignorePiTags: true,
  });
  let tree: OrderedNode[];
  try {
    tree = parser.parse(xml) as OrderedNode[];
  } catch (err) {
    const tooBig = err instanceof Error && /exceed/i.test(err.message);
    const e = tooBig
      ? new KbParseError('too_complex', 'The XML file defines entities that expand beyond the allowed size.')
      : new KbParseError('corrupt', 'The XML file could not be read.');
    (e as { cause?: unknown }).cause = err;
    throw e;
  }
  const grouper = new SectionGrouper({
    contextOf: (units) => {
      const prefix = commonPathPrefix(units.map((u) => (u.context ?? '').split('/').filter(Boolean)));
      return prefix.length > 0 ? `/${prefix.join('/')}` : null;
    },
  });
  let index = 0;
  for (const unit of walk(tree, [])) grouper.add(unit, index++);
  const sections = grouper.take();
  if (sections.length === 0) throw new KbParseError('empty', 'The XML document has no text to index.');
  return { type: 'xml', sections, pageCount: null };
}

function* walk(nodes: OrderedNode[], path: string[]): Generator<TextUnit> {
  const elements = nodes.filter((n) => elementName(n) !== null);
  const counts = new Map<string, number>();
  for (const n of elements) counts.set(elementName(n)!, (counts.get(elementName(n)!) ?? 0) + 1);
  const seen = new Map<string, number>();
  for (const node of elements) {
    const name = elementName(node)!;
    const nth = (seen.get(name) ?? 0) + 1;
    seen.set(name, nth);
    const elementPath = [...path, counts.get(name)! > 1 ? `${name}[${nth}]` : name];
    const shown = elementPath.join('/');
    const lines: string[] = [];
    for (const [attr, v] of Object.entries(node[':@'] ?? {})) lines.push(`${shown}/${attr}: ${String(v)}`);
    const children = (node[name] as OrderedNode[] | undefined) ?? [];
    const text = children
      .map((c) => ('#text' in c ? String(c['#text']) : ''))
      .filter((t) => t.trim())
      .join(' ');
    if (text) lines.push(`${shown}: ${text}`);
    if (lines.length > 0) yield { text: lines.join('\n'), context: elementPath.slice(0, children.some((c) => elementName(c) !== null) ? undefined : -1).join('/') };
    yield* walk(children, elementPath);
  }
}

function elementName(node: OrderedNode): string | null {
  for (const key of Object.keys(node)) {
    if (key === ':@' || key === '#text' || key.startsWith('?') || key.startsWith('!')) continue;
    return key;
  }
  return null;
}
