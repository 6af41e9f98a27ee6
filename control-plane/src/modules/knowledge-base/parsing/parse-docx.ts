import mammoth from 'mammoth';
import { KbParseError, type ParsedDocument } from '../types.js';
import { htmlToSections } from './html-sections.js';
import { officeReadError } from './office-encryption.js';

/**
 * A Word document's text through mammoth's semantic HTML (Word heading styles become
 * h1..h6), then cut like HTML: one section per heading with the heading path as context,
 * tables one line per row. Images, headers, footers and comments are not indexed.
 * @throws KbParseError `corrupt` (not a readable DOCX, e.g. truncated), `encrypted` (password-protected), `empty`.
 */
export async function parseDocx(filePath: string): Promise<ParsedDocument> {
  let html: string;
  try {
    // Images would be inlined as base64 data URIs only to be dropped again: skip them.
    const result = await mammoth.convertToHtml({ path: filePath }, { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) });
    html = result.value;
  } catch (err) {
    throw await officeReadError(filePath, 'DOCX', err);
  }
  const { sections } = htmlToSections(html, { useTitle: false });
  if (sections.length === 0) throw new KbParseError('empty', 'The DOCX document has no text to index.');
  return { type: 'docx', sections, pageCount: null };
}
