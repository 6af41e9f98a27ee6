import { fileTypeFromBuffer } from 'file-type';
import type { KbDocumentType } from '../types.js';
import { encodingFromBom, type TextEncoding } from './text-decoding.js';

/** How many leading bytes of an upload {@link detectDocumentType} needs (OOXML names its content types in the first entry). */
export const SNIFF_HEAD_BYTES = 4096;

/** The MIME type recorded on a document of each type (spec "Knowledge-base document"). */
export const KB_MIME_TYPES: Record<KbDocumentType, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv',
  markdown: 'text/markdown',
  html: 'text/html',
  json: 'application/json',
  xml: 'application/xml',
  text: 'text/plain',
};

const TYPE_NAMES: Record<KbDocumentType, string> = {
  pdf: 'PDF', docx: 'DOCX', xlsx: 'XLSX', csv: 'CSV', markdown: 'Markdown', html: 'HTML', json: 'JSON', xml: 'XML', text: 'plain text',
};

/** Declared MIME types (besides {@link KB_MIME_TYPES}) that browsers and clients send for the supported formats. */
const MIME_ALIASES: Record<string, KbDocumentType> = {
  'application/x-pdf': 'pdf',
  'application/csv': 'csv',
  'text/comma-separated-values': 'csv',
  'text/x-markdown': 'markdown',
  'application/xhtml+xml': 'html',
  'text/json': 'json',
  'text/xml': 'xml',
};

const EXTENSIONS: Record<string, KbDocumentType> = {
  pdf: 'pdf', docx: 'docx', xlsx: 'xlsx', csv: 'csv', md: 'markdown', markdown: 'markdown',
  html: 'html', htm: 'html', xhtml: 'html', json: 'json', xml: 'xml', txt: 'text', text: 'text',
};

const BINARY_TYPES: ReadonlySet<KbDocumentType> = new Set(['pdf', 'docx', 'xlsx']);

export interface DetectInput {
  /** The first bytes of the upload ({@link SNIFF_HEAD_BYTES}); fewer when the file is shorter. */
  head: Uint8Array;
  /** The client's filename; only its extension is used. */
  filename: string | null;
  /** The part's declared Content-Type, parameters allowed; `application/octet-stream` counts as none. */
  declaredMime: string | null;
}

export type DetectResult =
  | { ok: true; type: KbDocumentType; mimeType: string; encoding: TextEncoding | null }
  | { ok: false; status: 415 | 422; field: 'file'; reason: string };

/**
 * Decides a knowledge-base upload's type; the content wins over the name and the declared
 * type. Binary formats are recognised by their magic (PDF) or their inner content types
 * (DOCX, XLSX); text formats must be valid UTF-8 without NULs (or UTF-16 with a BOM), and
 * then the extension or the declared type says which text format, falling back to a look
 * at the first characters. Outcomes:
 * - the content is a supported binary format: that type, whatever the name says;
 * - the name or declared type claims a supported type but the content is something else
 *   (a `.pdf` that is a PNG or text, a `.json` that is HTML, an empty file): 422 on `file`;
 * - nothing claims a supported type and the content is not one (PNG, ZIP, EXE): 415.
 * No I/O: async only because file-type's API is.
 */
export async function detectDocumentType(input: DetectInput): Promise<DetectResult> {
  const { head } = input;
  const claims = claimedTypes(input);
  const claimed = claims[0] ?? null;
  if (head.length === 0) return unprocessable('the file is empty');

  const sniffed = await fileTypeFromBuffer(head);
  // file-type also names some text formats (XML, SVG, subtitles): those go the text way.
  if (sniffed && sniffed.ext !== 'xml' && !sniffed.mime.startsWith('text/') && !sniffed.mime.endsWith('+xml')) {
    const binary = sniffed.ext === 'pdf' ? 'pdf' : sniffed.ext === 'docx' ? 'docx' : sniffed.ext === 'xlsx' ? 'xlsx' : null;
    if (binary) return accept(binary, null);
    const what = describeUnsupported(sniffed.ext, sniffed.mime);
    if (claimed) return unprocessable(`the content is ${what}, not ${TYPE_NAMES[claimed]} as the ${claimSource(input, claimed)} says`);
    return unsupported(`${what} is not a supported document type`);
  }

  const text = decodeHead(head);
  if (text === null) {
    if (claimed) return unprocessable(`the content is binary data, not ${TYPE_NAMES[claimed]} as the ${claimSource(input, claimed)} says`);
    return unsupported('binary content of an unknown type is not a supported document type');
  }
  const { encoding, chars } = text;
  const look = lookAtText(chars);

  const textClaims = claims.filter((t) => !BINARY_TYPES.has(t));
  if (claimed && textClaims.length === 0) {
    return unprocessable(`the content is text, not ${TYPE_NAMES[claimed]} as the ${claimSource(input, claimed)} says`);
  }
  // A specific text claim beats `text/plain` (browsers send it for .csv and .md files).
  const textClaim = textClaims.find((t) => t !== 'text') ?? textClaims[0];
  if (!textClaim) return accept(look ?? 'text', encoding);
  if (textClaim === 'json' && look !== 'json') return unprocessable(mismatch(input, 'json', look));
  // XML may open with a comment or a DOCTYPE: any markup will do, the parser judges the rest.
  if (textClaim === 'xml' && !chars.trimStart().startsWith('<')) return unprocessable(mismatch(input, 'xml', look));
  return accept(textClaim, encoding);
}

function accept(type: KbDocumentType, encoding: TextEncoding | null): DetectResult {
  return { ok: true, type, mimeType: KB_MIME_TYPES[type], encoding };
}

function unprocessable(reason: string): DetectResult {
  return { ok: false, status: 422, field: 'file', reason };
}

function unsupported(reason: string): DetectResult {
  return {
    ok: false,
    status: 415,
    field: 'file',
    reason: `${reason}; supported: PDF, DOCX, XLSX, CSV, Markdown, HTML, JSON, XML and plain text`,
  };
}

function mismatch(input: DetectInput, claimed: KbDocumentType, look: KbDocumentType | null): string {
  const what = look ? `${TYPE_NAMES[look]}, not ${TYPE_NAMES[claimed]}` : `not ${TYPE_NAMES[claimed]}`;
  return `the content is ${what} as the ${claimSource(input, claimed)} says`;
}

/** The supported types the extension and the declared MIME type claim, extension first. */
function claimedTypes(input: DetectInput): KbDocumentType[] {
  const out: KbDocumentType[] = [];
  const ext = extensionOf(input.filename);
  if (ext && EXTENSIONS[ext]) out.push(EXTENSIONS[ext]);
  const mime = input.declaredMime?.split(';')[0]?.trim().toLowerCase() ?? '';
  const fromMime = (Object.keys(KB_MIME_TYPES) as KbDocumentType[]).find((t) => KB_MIME_TYPES[t] === mime) ?? MIME_ALIASES[mime];
  if (fromMime && !out.includes(fromMime)) out.push(fromMime);
  return out;
}

function claimSource(input: DetectInput, type: KbDocumentType): string {
  const ext = extensionOf(input.filename);
  return ext && EXTENSIONS[ext] === type ? `filename extension .${ext}` : 'declared content type';
}

function extensionOf(filename: string | null): string | null {
  const m = /\.([A-Za-z0-9]+)$/.exec(filename ?? '');
  return m ? m[1]!.toLowerCase() : null;
}

function describeUnsupported(ext: string, mime: string): string {
  if (ext === 'cfb') return 'a legacy or password-protected Office file (OLE compound document)';
  return `${ext.toUpperCase()} (${mime})`;
}

/** The head as text when it is text: UTF-16 by BOM, else valid UTF-8 without NULs. */
function decodeHead(head: Uint8Array): { encoding: TextEncoding; chars: string } | null {
  const { encoding, bomBytes } = encodingFromBom(head);
  const body = head.subarray(bomBytes);
  let chars: string;
  try {
    // stream: true keeps a multi-byte character cut off at the end of the head from failing.
    chars = new TextDecoder(encoding, { fatal: true }).decode(body, { stream: true });
  } catch {
    return null;
  }
  // NUL and most C0 controls never appear in text documents; their presence means binary.
  // Allowed: tab, line feed, vertical tab, form feed, carriage return, escape (ANSI colours in logs).
  for (let i = 0; i < chars.length; i++) {
    const c = chars.charCodeAt(i);
    if (c < 0x20 && (c < 0x09 || c > 0x0d) && c !== 0x1b) return null;
  }
  return { encoding, chars };
}

/** What the first characters look like, when they say something: markup or JSON. */
function lookAtText(chars: string): KbDocumentType | null {
  const start = chars.trimStart().slice(0, 512).toLowerCase();
  if (start.startsWith('<!doctype html') || /^(<!--[\s\S]*?-->\s*)*<html[\s>]/.test(start)) return 'html';
  if (start.startsWith('<?xml') || /^<[a-z_][\w.:-]*[\s>/]/.test(start)) return /^<\?xml[^>]*>\s*<html[\s>]/.test(start) ? 'html' : 'xml';
  if (/^[[{]/.test(start)) return 'json';
  return null;
}
