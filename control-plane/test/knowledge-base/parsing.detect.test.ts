import { beforeAll, describe, expect, it } from 'vitest';
import { detectDocumentType, SNIFF_HEAD_BYTES } from '../../src/modules/knowledge-base/parsing/index.js';
import { makeDocx, makePdf, makeXlsx, makeZip } from './fixtures/parsing-files.js';

const utf8 = (s: string) => new TextEncoder().encode(s);
const utf16le = (s: string) => new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')]));
const utf16be = (s: string) => new Uint8Array(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(s, 'utf16le').swap16()]));
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
const EXE = new Uint8Array([0x4d, 0x5a, 0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff, 0, 0, ...new Array(48).fill(0)]);
const CFB = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Array(504).fill(0)]);

let pdf: Uint8Array;
let docx: Uint8Array;
let xlsx: Uint8Array;
let zip: Uint8Array;

beforeAll(async () => {
  const head = (b: Uint8Array) => b.subarray(0, SNIFF_HEAD_BYTES);
  pdf = head(await makePdf([['one'], ['two']]));
  docx = head(await makeDocx());
  xlsx = head(await makeXlsx());
  zip = head(makeZip([{ name: 'notes/readme.txt', data: utf8('hello') }]));
});

const detect = (head: Uint8Array, filename: string | null, declaredMime: string | null = null) => detectDocumentType({ head, filename, declaredMime });

describe('detectDocumentType', () => {
  it('recognises the binary formats by content, with their MIME types', async () => {
    expect(await detect(pdf, 'menu.pdf', 'application/pdf')).toEqual({ ok: true, type: 'pdf', mimeType: 'application/pdf', encoding: null });
    expect(await detect(docx, 'handbook.docx')).toMatchObject({ ok: true, type: 'docx', mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' });
    expect(await detect(xlsx, 'prices.xlsx')).toMatchObject({ ok: true, type: 'xlsx', mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' });
  });

  it('lets the content win when a supported binary format is misnamed', async () => {
    expect(await detect(pdf, 'scan.docx', 'application/octet-stream')).toMatchObject({ ok: true, type: 'pdf' });
    expect(await detect(xlsx, 'upload', null)).toMatchObject({ ok: true, type: 'xlsx' });
  });

  it.each([
    ['notes.csv', 'text/csv', 'a,b\n1,2\n', 'csv'],
    ['notes.csv', 'text/plain', 'a,b\n1,2\n', 'csv'],
    ['export', 'application/csv', 'a;b\n1;2\n', 'csv'],
    ['README.md', null, '# Title\n\ntext', 'markdown'],
    ['README.markdown', 'text/x-markdown', '# Title', 'markdown'],
    ['page.html', null, '<!doctype html><html><body>x</body></html>', 'html'],
    ['page.htm', 'text/html; charset=utf-8', '<p>fragment</p>', 'html'],
    ['data.json', 'application/json', ' {"a": 1}', 'json'],
    ['list.json', null, '[1, 2]', 'json'],
    ['feed.xml', 'text/xml', '<?xml version="1.0"?><rss/>', 'xml'],
    ['catalog.xml', null, '<catalog><book/></catalog>', 'xml'],
    ['notes.txt', 'text/plain', 'just words', 'text'],
    ['notes', null, 'just words', 'text'],
    ['notes', null, '{"sniffed": "json"}', 'json'],
    ['index', 'application/octet-stream', '<!DOCTYPE html><html></html>', 'html'],
    ['changelog.log', 'text/plain', 'line one\n\u001b[31mred\u001b[0m', 'text'],
    ['notes.txt', 'application/pdf', 'the extension agrees with the text', 'text'],
    ['feed.xml', null, '<!-- generated -->\n<!DOCTYPE feed>\n<feed/>', 'xml'],
  ])('takes %s (%s) as a text format', async (filename, mime, text, type) => {
    expect(await detect(utf8(text), filename, mime)).toMatchObject({ ok: true, type, encoding: 'utf-8' });
  });

  it('accepts UTF-8 and UTF-16 byte-order marks and reports the encoding', async () => {
    expect(await detect(new Uint8Array([0xef, 0xbb, 0xbf, ...utf8('a,b\n1,2')]), 'x.csv')).toMatchObject({ ok: true, type: 'csv', encoding: 'utf-8' });
    expect(await detect(utf16le('Name\tRole\nAnn\tChef'), 'staff.txt')).toMatchObject({ ok: true, type: 'text', encoding: 'utf-16le' });
    expect(await detect(utf16be('{"a": "ü"}'), 'x.json')).toMatchObject({ ok: true, type: 'json', encoding: 'utf-16be' });
  });

  it('does not fail on a multi-byte character cut off at the end of the head', async () => {
    const bytes = utf8('a'.repeat(10) + 'é'); // é is 2 bytes
    expect(await detect(bytes.subarray(0, bytes.length - 1), 'x.txt')).toMatchObject({ ok: true, type: 'text' });
  });

  it.each([
    ['PNG', () => PNG, 'photo.png', 'image/png', /PNG \(image\/png\)/],
    ['ZIP', zipHead, 'archive.zip', 'application/zip', /ZIP/],
    ['EXE', () => EXE, 'setup.exe', null, /EXE/],
    ['unknown binary', () => new Uint8Array([1, 2, 3, 0, 0, 0, 250, 251]), 'blob.bin', null, /binary content/],
  ])('answers 415 for unsupported content (%s) that claims no supported type', async (_label, head, filename, mime, reason) => {
    const result = await detect(head(), filename, mime);
    expect(result).toMatchObject({ ok: false, status: 415, field: 'file' });
    if (!result.ok) expect(result.reason).toMatch(reason);
  });

  it.each([
    ['a .pdf that is a PNG', () => PNG, 'menu.pdf', null, /PNG .* not PDF as the filename extension \.pdf says/],
    ['a .pdf that is text', () => utf8('%not a pdf, just text'), 'menu.pdf', null, /text, not PDF/],
    ['a .docx that is a plain ZIP', zipHead, 'handbook.docx', null, /ZIP .* not DOCX/],
    ['a .docx that is a password-protected Office file', () => CFB, 'secret.docx', null, /password-protected Office file/],
    ['an .xlsx that is CSV text', () => utf8('Name,Price'), 'prices.xlsx', null, /text, not XLSX/],
    ['a declared PDF without extension that is binary junk', () => new Uint8Array([0, 1, 2, 3]), 'upload', 'application/pdf', /binary data, not PDF as the declared content type says/],
    ['a .json that is HTML', () => utf8('<!doctype html><html></html>'), 'data.json', 'application/json', /HTML, not JSON/],
    ['a .json that is prose', () => utf8('hello world'), 'data.json', null, /not JSON/],
    ['an .xml that is JSON', () => utf8('{"a":1}'), 'feed.xml', null, /JSON, not XML/],
    ['an empty file', () => new Uint8Array(0), 'notes.txt', 'text/plain', /empty/],
  ])('answers 422 on file for %s', async (_label, head, filename, mime, reason) => {
    const result = await detect(head(), filename, mime);
    expect(result).toMatchObject({ ok: false, status: 422, field: 'file' });
    if (!result.ok) expect(result.reason).toMatch(reason);
  });

  it('treats a NUL in UTF-8 text as binary', async () => {
    expect(await detect(utf8('abc\u0000def'), 'notes.txt')).toMatchObject({ ok: false, status: 422 });
    expect(await detect(utf8('abc\u0000def'), 'notes.dat')).toMatchObject({ ok: false, status: 415 });
  });

  it('rejects invalid UTF-8 named as text', async () => {
    expect(await detect(new Uint8Array([0x61, 0xff, 0xfe, 0xfd, 0x62, 0xc3]), 'notes.csv')).toMatchObject({ ok: false, status: 422 });
  });
});

function zipHead(): Uint8Array {
  return zip;
}
