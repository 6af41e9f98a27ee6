import { KbParseError, type ParsedDocument } from '../types.js';
import { htmlToSections } from './html-sections.js';
import { readTextFile } from './text-decoding.js';

/**
 * An HTML page's readable text (see {@link htmlToSections}): sections per heading, the
 * heading path under the page title as context.
 * @throws KbParseError `empty` when the page has no text outside scripts, styles and navigation.
 */
export async function parseHtml(filePath: string): Promise<ParsedDocument> {
  const { sections } = htmlToSections(await readTextFile(filePath), { useTitle: true });
  if (sections.length === 0) throw new KbParseError('empty', 'The HTML page has no text to index.');
  return { type: 'html', sections, pageCount: null };
}
