import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { KbParseError, type ParsedDocument, type ParsedSection } from '../types.js';
import { tidyText } from './sections.js';

// The legacy build runs on Node 20 (v5+ needs Node 22); in Node it parses on a "fake worker"
// in this thread, which is already the parse worker, so the event loop is not blocked.
const pdfjsRoot = path.dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
// Node's font and CMap loaders read these as file paths; the trailing slash matters.
const standardFontDataUrl = path.join(pdfjsRoot, 'standard_fonts') + path.sep;
const cMapUrl = path.join(pdfjsRoot, 'cmaps') + path.sep;

interface TextItemLike {
  str: string;
  hasEOL: boolean;
  transform: number[];
  height: number;
}

/**
 * A PDF's text, one section per page that has text (pageNumber kept). Lines come from the
 * text items' end-of-line marks; a vertical gap of more than about one and a half lines
 * starts a new paragraph, so the chunker sees the page's paragraphs.
 * @throws KbParseError `encrypted` (needs a password to open), `corrupt`, `empty` (no text: scanned or image-only).
 */
export async function parsePdf(filePath: string): Promise<ParsedDocument> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const data = new Uint8Array(await readFile(filePath));
  const task = pdfjs.getDocument({
    data,
    standardFontDataUrl,
    cMapUrl,
    cMapPacked: true,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  });
  let doc;
  try {
    doc = await task.promise;
  } catch (err) {
    await task.destroy().catch(() => undefined);
    const name = (err as { name?: string }).name;
    if (name === 'PasswordException') throw new KbParseError('encrypted', 'The PDF is password-protected. Upload it without a password.');
    throw corrupt(err);
  }
  try {
    const sections: ParsedSection[] = [];
    for (let pageNumber = 1; pageNumber <= doc.numPages; pageNumber++) {
      const page = await doc.getPage(pageNumber);
      const content = await page.getTextContent();
      const text = tidyText(pageText(content.items as TextItemLike[]));
      page.cleanup();
      if (text) sections.push({ text, pageNumber, context: null });
    }
    if (sections.length === 0) {
      throw new KbParseError('empty', 'The PDF has no text to index (a scanned or image-only PDF needs OCR, which is not supported).');
    }
    return { type: 'pdf', sections, pageCount: doc.numPages };
  } catch (err) {
    if (err instanceof KbParseError) throw err;
    throw corrupt(err);
  } finally {
    await doc.destroy().catch(() => undefined);
  }
}

function corrupt(err: unknown): KbParseError {
  const e = new KbParseError('corrupt', 'The PDF is damaged or truncated and could not be read.');
  (e as { cause?: unknown }).cause = err;
  return e;
}

/** Joins a page's text items; items without `str` (marked content) are skipped. */
function pageText(items: TextItemLike[]): string {
  let out = '';
  let lastY: number | null = null;
  let lastHeight = 0;
  for (const item of items) {
    if (typeof item.str !== 'string') continue;
    const y = item.transform[5] ?? 0;
    if (lastY !== null && item.str) {
      const gap = Math.abs(lastY - y);
      const lineHeight = Math.max(lastHeight, item.height, 1);
      if (gap > lineHeight * 1.6) out = out.replace(/\n?$/, '\n\n');
      else if (gap > lineHeight * 0.5 && !out.endsWith('\n')) out += '\n';
      else if (out && !/\s$/.test(out) && !/^\s/.test(item.str)) out += ' ';
    }
    out += item.str;
    if (item.hasEOL) out += '\n';
    if (item.str) {
      lastY = y;
      lastHeight = item.height;
    }
  }
  return out;
}
