import { Lexer, type Token, type Tokens } from 'marked';
import { KbParseError, type ParsedDocument, type ParsedSection } from '../types.js';
import { tidyText } from './sections.js';
import { readTextFile } from './text-decoding.js';

/**
 * Markdown through marked's lexer: one section per heading (its line and the blocks under
 * it), the heading path as context (`Menu > Desserts`). Inline markup is reduced to its
 * text (links keep their text, images their alt text); fenced and indented code blocks are
 * kept verbatim inside ``` fences; tables become one `header: value; …` line per row.
 * @throws KbParseError `empty`.
 */
export async function parseMarkdown(filePath: string): Promise<ParsedDocument> {
  const tokens = new Lexer({ gfm: true }).lex(await readTextFile(filePath));
  const sections: ParsedSection[] = [];
  const path: { depth: number; text: string }[] = [];
  let blocks: string[] = [];
  const flush = () => {
    const text = tidyText(blocks.join('\n\n'));
    if (text) sections.push({ text, pageNumber: null, context: path.length > 0 ? path.map((p) => p.text).join(' > ') : null });
    blocks = [];
  };
  for (const token of tokens) {
    if (token.type === 'heading') {
      const h = token as Tokens.Heading;
      const text = inline(h.tokens).replace(/\s+/g, ' ').trim();
      if (!text) continue;
      flush();
      while (path.length > 0 && path[path.length - 1]!.depth >= h.depth) path.pop();
      path.push({ depth: h.depth, text });
      blocks.push(text);
      continue;
    }
    const text = block(token);
    if (text.trim()) blocks.push(text);
  }
  flush();
  if (sections.length === 0) throw new KbParseError('empty', 'The Markdown document has no text to index.');
  return { type: 'markdown', sections, pageCount: null };
}

function block(token: Token): string {
  switch (token.type) {
    case 'paragraph':
      return inline((token as Tokens.Paragraph).tokens);
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inline(t.tokens) : t.text;
    }
    case 'code': {
      const c = token as Tokens.Code;
      return `\`\`\`${c.lang ?? ''}\n${c.text}\n\`\`\``;
    }
    case 'blockquote':
      return (token as Tokens.Blockquote).tokens.map(block).filter(Boolean).join('\n\n');
    case 'list': {
      const l = token as Tokens.List;
      const start = typeof l.start === 'number' ? l.start : 1;
      return l.items
        .map((item, i) => {
          const body = item.tokens.map(block).filter(Boolean).join('\n');
          const mark = item.task ? (item.checked ? '[x] ' : '[ ] ') : '';
          return `${l.ordered ? `${start + i}.` : '-'} ${mark}${body.replace(/\n/g, '\n  ')}`;
        })
        .join('\n');
    }
    case 'table': {
      const t = token as Tokens.Table;
      const headers = t.header.map((h) => inline(h.tokens).trim());
      return t.rows
        .map((row) => row.map((cell, i) => { const v = inline(cell.tokens).trim(); return v ? `${headers[i] || `Column ${i + 1}`}: ${v}` : ''; }).filter(Boolean).join('; '))
        .filter(Boolean)
        .join('\n');
    }
    case 'html':
      return stripTags((token as Tokens.HTML).text);
    case 'heading':
      return inline((token as Tokens.Heading).tokens);
    default:
      // space, hr, def (link reference definitions) carry no text.
      return '';
  }
}

function inline(tokens: Token[] | undefined): string {
  if (!tokens) return '';
  return tokens
    .map((t) => {
      switch (t.type) {
        case 'text':
        case 'strong':
        case 'em':
        case 'del':
        case 'link': {
          const withChildren = t as Tokens.Text | Tokens.Strong | Tokens.Em | Tokens.Del | Tokens.Link;
          return withChildren.tokens ? inline(withChildren.tokens) : withChildren.text;
        }
        case 'codespan':
          return `\`${(t as Tokens.Codespan).text}\``;
        case 'image':
          return (t as Tokens.Image).text;
        case 'br':
          return '\n';
        case 'escape':
          return (t as Tokens.Escape).text;
        case 'html':
          return stripTags((t as Tokens.Tag).text);
        default:
          return 'raw' in t && typeof t.raw === 'string' ? t.raw : '';
      }
    })
    .join('');
}

function stripTags(html: string): string {
  return html.replace(/<!--[\s\S]*?-->/g, '').replace(/<\/?[A-Za-z][^>]*>/g, '');
}
