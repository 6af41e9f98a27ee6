import { KbParseError, type ParsedDocument } from '../types.js';
import { paragraphs, SectionGrouper } from './sections.js';
import { readTextFile } from './text-decoding.js';

/**
 * Plain text (UTF-8, or UTF-16 by its BOM): paragraphs split at blank lines, short ones
 * grouped into sections of about SECTION_TARGET_CHARS (a longer paragraph stays whole for
 * the chunker to split at sentences). No context: plain text has no structure to name.
 * @throws KbParseError `empty`.
 */
export async function parseText(filePath: string): Promise<ParsedDocument> {
  const grouper = new SectionGrouper({ contextOf: () => null, separator: '\n\n' });
  let index = 0;
  for (const p of paragraphs(await readTextFile(filePath))) grouper.add({ text: p, context: null }, index++);
  const sections = grouper.take();
  if (sections.length === 0) throw new KbParseError('empty', 'The text file has no text to index.');
  return { type: 'text', sections, pageCount: null };
}
