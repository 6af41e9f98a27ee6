import type { KbDocumentType, ParsedDocument } from '../types.js';

type Parser = (filePath: string) => Promise<ParsedDocument>;

// Loaded on first use: a parse worker starts fresh for each file, and loading every
// library (pdf.js, exceljs, mammoth) for a text file would cost seconds of its start.
const PARSERS: Record<KbDocumentType, () => Promise<Parser>> = {
  pdf: async () => (await import('./parse-pdf.js')).parsePdf,
  docx: async () => (await import('./parse-docx.js')).parseDocx,
  xlsx: async () => (await import('./parse-xlsx.js')).parseXlsx,
  csv: async () => (await import('./parse-csv.js')).parseCsv,
  markdown: async () => (await import('./parse-markdown.js')).parseMarkdown,
  html: async () => (await import('./parse-html.js')).parseHtml,
  json: async () => (await import('./parse-json.js')).parseJson,
  xml: async () => (await import('./parse-xml.js')).parseXml,
  text: async () => (await import('./parse-text.js')).parseText,
};

/**
 * Extracts a stored upload's text as sections in reading order, with the format's
 * parser. Runs on the calling thread: the control plane calls {@link parseInWorker}
 * instead, which runs this in a worker thread under a time and memory limit.
 * @throws KbParseError for corrupt, encrypted or empty files (`message` is user-facing).
 */
export async function parseDocument(type: KbDocumentType, filePath: string): Promise<ParsedDocument> {
  const parse = await PARSERS[type]();
  return parse(filePath);
}
