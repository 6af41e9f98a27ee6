import { compile, type DomNode, type FormatCallback } from 'html-to-text';
import type { ParsedSection } from '../types.js';
import { tidyText } from './sections.js';

// Private-use characters mark headings and the title in html-to-text's output, which is
// then cut into sections at the marks. They cannot come from the document: html-to-text
// only emits them through these formatters (a document's own U+E000..E003 are removed first).
const H_OPEN = '\uE000';
const H_LEVEL_END = '\uE001';
const MARK_END = '\uE002';
const TITLE_OPEN = '\uE003';
const OUR_MARKS = /[\uE000-\uE003]/g;

const SKIPPED = [
  'script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'embed',
  'nav', '[role=navigation]', 'button', 'select', 'input', 'textarea', 'img', 'meta', 'link', 'base',
];

const heading: FormatCallback = (elem, walk, builder) => {
  const level = Number(/^h([1-6])$/.exec(elem.name ?? '')?.[1] ?? 6);
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addLiteral(`${H_OPEN}${level}${H_LEVEL_END}`);
  walk(elem.children, builder);
  builder.addLiteral(MARK_END);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

const title: FormatCallback = (elem, _walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 1 });
  builder.addLiteral(`${TITLE_OPEN}${plainText(elem)}${MARK_END}`);
  builder.closeBlock({ trailingLineBreaks: 1 });
};

/** A table as one line per row: `header: value; header: value` when it has header cells, else `a | b`. */
const table: FormatCallback = (elem, _walk, builder) => {
  const rows = tableRows(elem);
  if (rows.length === 0) return;
  const hasHeader = rows[0]!.every((c) => c.header) || elem.children.some((c) => c.name === 'thead');
  const headers = hasHeader ? rows[0]!.map((c) => c.text) : null;
  builder.openBlock({ leadingLineBreaks: 2 });
  let first = true;
  for (const row of hasHeader ? rows.slice(1) : rows) {
    const line = headers
      ? row.map((c, i) => (c.text ? `${headers[i] || `Column ${i + 1}`}: ${c.text}` : '')).filter(Boolean).join('; ')
      : row.map((c) => c.text).join(' | ');
    if (!line.replace(/[|\s]/g, '')) continue;
    if (!first) builder.addLineBreak();
    builder.addLiteral(line);
    first = false;
  }
  builder.closeBlock({ trailingLineBreaks: 2 });
};

const convert = compile({
  wordwrap: false,
  baseElements: { selectors: [], returnDomByDefault: true },
  // The default (16 MB) silently truncates; a 50 MB DOCX can make more HTML than that. The worker's heap limit bounds it.
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
  formatters: { kbHeading: heading, kbTitle: title, kbTable: table },
  selectors: [
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, format: 'kbHeading' })),
    { selector: 'title', format: 'kbTitle' },
    { selector: 'table', format: 'kbTable' },
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'ul', options: { itemPrefix: '- ' } },
    ...SKIPPED.map((selector) => ({ selector, format: 'skip' })),
  ],
});

/**
 * HTML as sections: one per heading, holding the heading's line and the text under it,
 * with the heading path as context (`Opening hours > Weekends`). The page title, when the
 * document has one, is the root of every context (skipped when the first heading repeats
 * it). Scripts, styles, navigation, forms and images are dropped; tables become one line
 * per row; links keep their text only.
 */
export function htmlToSections(html: string, opts: { useTitle: boolean }): { sections: ParsedSection[]; title: string | null } {
  const text = convert(html.replace(OUR_MARKS, ''));
  const sections: ParsedSection[] = [];
  const path: { level: number; text: string }[] = [];
  let docTitle: string | null = null;
  let body = '';
  const contextNow = (): string | null => {
    const parts = path.map((p) => p.text);
    if (opts.useTitle && docTitle && parts[0] !== docTitle) parts.unshift(docTitle);
    return parts.length > 0 ? parts.join(' > ') : null;
  };
  const flush = () => {
    const t = tidyText(body);
    if (t) sections.push({ text: t, pageNumber: null, context: contextNow() });
    body = '';
  };
  const marks = new RegExp(`${H_OPEN}(\\d)${H_LEVEL_END}([\\s\\S]*?)${MARK_END}|${TITLE_OPEN}([\\s\\S]*?)${MARK_END}`, 'g');
  let at = 0;
  for (const m of text.matchAll(marks)) {
    body += text.slice(at, m.index);
    at = m.index + m[0].length;
    if (m[3] !== undefined) {
      docTitle ??= collapse(m[3]) || null;
      continue;
    }
    const headingText = collapse(m[2] ?? '');
    if (!headingText) continue;
    flush();
    const level = Number(m[1]);
    while (path.length > 0 && path[path.length - 1]!.level >= level) path.pop();
    path.push({ level, text: headingText });
    body = `${headingText}\n`;
  }
  body += text.slice(at);
  flush();
  return { sections, title: docTitle };
}

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** The text inside a node, whitespace collapsed, without scripts and styles. */
function plainText(node: DomNode): string {
  if (node.type === 'text') return node.data ?? '';
  if (node.type === 'script' || node.type === 'style' || node.type === 'comment') return '';
  return collapse((node.children ?? []).map(plainText).join(node.name === 'br' ? '\n' : ' '));
}

function tableRows(elem: DomNode): { text: string; header: boolean }[][] {
  const rows: { text: string; header: boolean }[][] = [];
  const visit = (node: DomNode) => {
    for (const child of node.children ?? []) {
      if (child.name === 'tr') {
        rows.push(
          (child.children ?? [])
            .filter((c) => c.name === 'td' || c.name === 'th')
            .map((c) => ({ text: collapse(plainText(c)), header: c.name === 'th' })),
        );
      } else if (child.name === 'thead' || child.name === 'tbody' || child.name === 'tfoot') visit(child);
    }
  };
  visit(elem);
  return rows.filter((r) => r.length > 0);
}
