import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from '../../src/modules/knowledge-base/parsing/index.js';
import { KbParseError, type KbDocumentType, type KbParseErrorCode } from '../../src/modules/knowledge-base/types.js';
import { makeDocx, makeEncryptedPdf, makePdf, makeRepeatingDocx, makeXlsx, scratchDir } from './fixtures/parsing-files.js';

const scratch = scratchDir();
afterAll(() => scratch.cleanup());

async function failure(type: KbDocumentType, path: string): Promise<KbParseError> {
  const err = await parseDocument(type, path).then(
    (doc) => new Error(`parsed instead of failing: ${JSON.stringify(doc).slice(0, 300)}`),
    (e: unknown) => e,
  );
  if (!(err instanceof KbParseError)) throw err;
  return err;
}

const expectFailure = async (type: KbDocumentType, path: string, code: KbParseErrorCode, message: RegExp) => {
  const err = await failure(type, path);
  expect({ code: err.code, message: err.message }).toEqual({ code, message: expect.stringMatching(message) });
};

describe('parseDocument on bad files', () => {
  let pdf: Uint8Array;
  let docx: Uint8Array;
  let xlsx: Uint8Array;
  beforeAll(async () => {
    pdf = await makePdf([['Page one text'], ['Page two text']]);
    docx = await makeDocx();
    xlsx = await makeXlsx();
  });

  it('a password-protected PDF is "encrypted" (and the same file opens with its password)', async () => {
    const bytes = makeEncryptedPdf('Secret recipe uses saffron', 'open-sesame');
    await expectFailure('pdf', scratch.file('locked.pdf', bytes), 'encrypted', /password-protected/);
    // The hand-made file is a real encrypted PDF: pdf.js decrypts it with the password.
    const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
    const doc = await pdfjs.getDocument({ data: bytes.slice(), password: 'open-sesame', verbosity: 0 }).promise;
    const items = (await (await doc.getPage(1)).getTextContent()).items as { str: string }[];
    expect(items.map((i) => i.str).join('')).toBe('Secret recipe uses saffron');
    await doc.destroy();
  });

  it.each([0.3, 0.7])('a PDF truncated to %s of its length is "corrupt"', async (fraction) => {
    await expectFailure('pdf', scratch.file(`cut-${fraction}.pdf`, pdf.subarray(0, Math.floor(pdf.length * fraction))), 'corrupt', /PDF is damaged or truncated/);
  });

  it('a PDF with pages but no text (image-only) is "empty"', async () => {
    await expectFailure('pdf', scratch.file('blank.pdf', await makePdf([[], []])), 'empty', /no text.*OCR/);
  });

  it.each([0.1, 0.6, 0.99])('a DOCX truncated to %s of its length is "corrupt"', async (fraction) => {
    await expectFailure('docx', scratch.file(`cut-${fraction}.docx`, docx.subarray(0, Math.floor(docx.length * fraction))), 'corrupt', /DOCX file is damaged or truncated/);
  });

  it('a DOCX without text is "empty"', async () => {
    await expectFailure('docx', scratch.file('blank.docx', makeRepeatingDocx(2, '')), 'empty', /DOCX document has no text/);
  });

  it.each([0.1, 0.6, 0.99])('an XLSX truncated to %s of its length is "corrupt"', async (fraction) => {
    await expectFailure('xlsx', scratch.file(`cut-${fraction}.xlsx`, xlsx.subarray(0, Math.floor(xlsx.length * fraction))), 'corrupt', /XLSX file is damaged or truncated/);
  });

  it('a password-protected DOCX or XLSX (an OLE compound file) is "encrypted"', async () => {
    // MS-CFB header: magic, minor/major version 3, byte order FFFE, 512-byte sectors; then an empty FAT.
    const header = Buffer.alloc(1024);
    Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(header);
    header.writeUInt16LE(0x3e, 24);
    header.writeUInt16LE(3, 26);
    header.writeUInt16LE(0xfffe, 28);
    header.writeUInt16LE(9, 30);
    await expectFailure('docx', scratch.file('locked.docx', header), 'encrypted', /DOCX file is password-protected .*\.doc/);
    await expectFailure('xlsx', scratch.file('locked.xlsx', header), 'encrypted', /XLSX file is password-protected .*\.xls/);
  });

  it('a ZIP without sheets (a DOCX) read as XLSX is "empty", not a crash', async () => {
    await expectFailure('xlsx', scratch.file('docx-as.xlsx', docx), 'empty', /no text/);
  });

  it('invalid JSON, malformed XML and an unclosed CSV quote are "corrupt" with the problem named', async () => {
    await expectFailure('json', scratch.file('bad.json', '{"a": 1,'), 'corrupt', /not valid JSON: .*position/);
    await expectFailure('xml', scratch.file('bad.xml', '<a><b></a>'), 'corrupt', /not well-formed XML: .*closing tag.*\(line 1\)/);
    await expectFailure('csv', scratch.file('bad.csv', 'a,b\n"x,1\n2,3\n'), 'corrupt', /CSV file could not be read: Quote Not Closed/);
  });

  it.each([
    ['text', 'blank.txt', '\n \n\t\n'],
    ['markdown', 'blank.md', '---\n\n[ref]: https://example.com\n'],
    ['html', 'blank.html', '<html><head><script>x()</script></head><body><nav>Home</nav></body></html>'],
    ['json', 'blank.json', '{"a": {}, "b": []}'],
    ['xml', 'blank.xml', '<a><b/></a>'],
    ['csv', 'blank.csv', '\n\n'],
  ] as const)('a %s file with nothing to index is "empty"', async (type, name, content) => {
    await expectFailure(type, scratch.file(name, content), 'empty', /no (text|values) to index/);
  });

  it('XML entities that nest ("billion laughs") are not expanded', async () => {
    const levels = Array.from({ length: 8 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`).join('');
    const xml = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY l0 "lol">${levels}]><r><a>&l8;</a></r>`;
    const doc = await parseDocument('xml', scratch.file('lol.xml', xml));
    expect(doc.sections).toHaveLength(1);
    expect(doc.sections[0]!.text.length).toBeLessThan(100);
  });
});
