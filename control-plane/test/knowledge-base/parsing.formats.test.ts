import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument, SECTION_TARGET_CHARS } from '../../src/modules/knowledge-base/parsing/index.js';
import type { ParsedDocument } from '../../src/modules/knowledge-base/types.js';
import { makeDocx, makePdf, makeXlsx, scratchDir } from './fixtures/parsing-files.js';

const scratch = scratchDir();
afterAll(() => scratch.cleanup());

const all = (doc: ParsedDocument) => doc.sections.map((s) => s.text).join('\n');
const sectionWith = (doc: ParsedDocument, needle: string) => {
  const s = doc.sections.find((x) => x.text.includes(needle));
  if (!s) throw new Error(`no section contains ${JSON.stringify(needle)}: ${JSON.stringify(doc.sections)}`);
  return s;
};

describe('parseDocument', () => {
  let pdfPath: string;
  let docxPath: string;
  let xlsxPath: string;
  beforeAll(async () => {
    pdfPath = scratch.file('menu.pdf', await makePdf([
      ['Harbour Bistro menu', 'Fish soup with saffron 12.50 EUR'],
      [],
      ['Desserts', 'Apple cake 6.25 EUR'],
    ]));
    docxPath = scratch.file('handbook.docx', await makeDocx());
    xlsxPath = scratch.file('prices.xlsx', await makeXlsx());
  });

  it('PDF: one section per page with text, page numbers kept, empty pages skipped', async () => {
    const doc = await parseDocument('pdf', pdfPath);
    expect(doc.type).toBe('pdf');
    expect(doc.pageCount).toBe(3);
    expect(doc.sections.map((s) => s.pageNumber)).toEqual([1, 3]);
    expect(doc.sections[0]!.text).toBe('Harbour Bistro menu\nFish soup with saffron 12.50 EUR');
    expect(doc.sections[1]!.text).toBe('Desserts\nApple cake 6.25 EUR');
  });

  it('DOCX: sections per heading with the heading path as context; lists and table rows kept', async () => {
    const doc = await parseDocument('docx', docxPath);
    expect(doc.pageCount).toBeNull();
    expect(sectionWith(doc, 'founded in 1987')).toMatchObject({ context: 'Harbour Bistro handbook', pageNumber: null });
    const hours = sectionWith(doc, 'Weekdays from 11:00 to 22:00');
    expect(hours.context).toBe('Harbour Bistro handbook > Opening hours');
    expect(hours.text).toContain('- Closed on Mondays in January');
    const allergens = sectionWith(doc, 'Fish soup');
    expect(allergens.context).toBe('Harbour Bistro handbook > Allergens');
    expect(allergens.text).toContain('Dish: Fish soup; Allergen: fish, celery');
  });

  it('XLSX: rows as header: value pairs, sheet and row range as context, a section list per sheet', async () => {
    const doc = await parseDocument('xlsx', xlsxPath);
    expect(doc.pageCount).toBe(2);
    expect(doc.sections).toEqual([
      {
        text: 'Dish: Fish soup; Price EUR: 12.5; On menu since: 2024-01-02\nDish: Apple cake; Price EUR: 6.25',
        pageNumber: null,
        context: 'Sheet "Prices", rows 2-3',
      },
      { text: 'Name: Ann Lee; Role: Head chef', pageNumber: null, context: 'Sheet "Staff", row 2' },
    ]);
  });

  it('XLSX: groups many rows into sections of bounded size with their row ranges', async () => {
    const doc = await parseDocument('xlsx', scratch.file('big.xlsx', await makeXlsx(400)));
    const prices = doc.sections.filter((s) => s.context?.startsWith('Sheet "Prices"'));
    expect(prices.length).toBeGreaterThan(3);
    for (const s of prices) expect(s.text.length).toBeLessThanOrEqual(SECTION_TARGET_CHARS);
    const ranges = prices.map((s) => /rows (\d+)-(\d+)/.exec(s.context!)!.slice(1).map(Number));
    expect(ranges[0]![0]).toBe(2);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1]! + 1);
    expect(ranges.at(-1)![1]).toBe(403);
    expect(sectionWith(doc, 'Special 399').text).toContain('Dish: Special 399; Price EUR: 399');
  });

  it('XLSX: keeps the zip entries after the worksheets when copying a worksheet to its temp file is slow (patches/exceljs@4.4.0.patch)', async () => {
    // exceljs's streaming reader copies each worksheet that comes before the shared strings to
    // a temp file. Unpatched, when that copy took long (a loaded machine), the zip's entries
    // after it (shared strings, workbook.xml) were dropped and reading failed, or lost text.
    const tmp = createRequire(createRequire(import.meta.url).resolve('exceljs'))('tmp') as { file: (cb: unknown) => void };
    const file = tmp.file;
    tmp.file = (cb) => void setTimeout(() => file.call(tmp, cb), 50);
    try {
      const doc = await parseDocument('xlsx', xlsxPath);
      expect(doc.pageCount).toBe(2);
      expect(doc.sections.map((s) => s.context)).toEqual(['Sheet "Prices", rows 2-3', 'Sheet "Staff", row 2']);
      expect(sectionWith(doc, 'Ann Lee').text).toBe('Name: Ann Lee; Role: Head chef');
    } finally {
      tmp.file = file;
    }
  });

  it('CSV: header row, rows as header: value pairs, semicolon delimiter and quoted fields', async () => {
    const path = scratch.file('menu.csv', 'Dish;Price;Note\r\nFish soup;12.50;"hot; with ""saffron"""\r\n\r\nApple cake;6.25;\r\n');
    const doc = await parseDocument('csv', path);
    expect(doc).toEqual({
      type: 'csv',
      pageCount: null,
      sections: [{ text: 'Dish: Fish soup; Price: 12.50; Note: hot; with "saffron"\nDish: Apple cake; Price: 6.25', pageNumber: null, context: 'Rows 2-4' }],
    });
  });

  it('CSV (rows as in XLSX): a one-value title row above the header stays a plain line; a one-column list stays plain', async () => {
    const csv = await parseDocument('csv', scratch.file('titled.csv', 'Price list 2024\n\nDish,Price\nFish soup,12.50\n'));
    expect(csv.sections).toEqual([{ text: 'Price list 2024\nDish: Fish soup; Price: 12.50', pageNumber: null, context: 'Rows 1-4' }]);
    const list = await parseDocument('csv', scratch.file('list.csv', 'Allergens\nfish\ncelery\n'));
    expect(list.sections).toEqual([{ text: 'Allergens\nfish\ncelery', pageNumber: null, context: 'Rows 1-3' }]);
  });

  it('CSV: UTF-16 with a BOM (Excel "Unicode text", tab-separated)', async () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Name\tCity\nZoë\tKöln\n', 'utf16le')]);
    const doc = await parseDocument('csv', scratch.file('staff.csv', bytes));
    expect(all(doc)).toBe('Name: Zoë; City: Köln');
  });

  it('Markdown: heading path as context, inline markup reduced, code blocks kept, tables as rows', async () => {
    const md = [
      '# Harbour Bistro', '', 'Welcome to **the _best_ bistro** in [town](https://example.com).', '',
      '## Opening hours', '', '- Weekdays: `11:00-22:00`', '- Sundays: closed', '',
      '### Holidays', '', 'Closed on 25 December.', '',
      '```sh', 'curl -s "https://example.com/api?a=1&b=<2>"', '```', '',
      '## Prices', '', '| Dish | Price |', '|------|------:|', '| Fish soup | 12.50 |',
    ].join('\n');
    const doc = await parseDocument('markdown', scratch.file('bistro.md', md));
    expect(doc.sections).toEqual([
      { text: 'Harbour Bistro\n\nWelcome to the best bistro in town.', pageNumber: null, context: 'Harbour Bistro' },
      { text: 'Opening hours\n\n- Weekdays: `11:00-22:00`\n- Sundays: closed', pageNumber: null, context: 'Harbour Bistro > Opening hours' },
      {
        text: 'Holidays\n\nClosed on 25 December.\n\n```sh\ncurl -s "https://example.com/api?a=1&b=<2>"\n```',
        pageNumber: null,
        context: 'Harbour Bistro > Opening hours > Holidays',
      },
      { text: 'Prices\n\nDish: Fish soup; Price: 12.50', pageNumber: null, context: 'Harbour Bistro > Prices' },
    ]);
  });

  it('HTML: title and headings as context, no script, style, navigation or link targets', async () => {
    const html = `<!DOCTYPE html><html><head><title>Harbour &amp; Co</title><style>body { color: red }</style>
      <script>window.secret = "tracking-code-123";</script></head><body>
      <nav><a href="/">Home</a> <a href="/menu">Menu link</a></nav>
      <h1>Opening hours</h1><p>We open at <b>11:00</b>, see <a href="https://example.com/x">our page</a>.</p>
      <h2>Holidays</h2><p>Closed&nbsp;on 25 December.</p>
      <table><thead><tr><th>Dish</th><th>Price</th></tr></thead><tbody><tr><td>Fish soup</td><td>12.50</td></tr></tbody></table>
      <noscript>Enable JavaScript</noscript></body></html>`;
    const doc = await parseDocument('html', scratch.file('page.html', html));
    expect(doc.sections).toEqual([
      { text: 'Opening hours\n\nWe open at 11:00, see our page.', pageNumber: null, context: 'Harbour & Co > Opening hours' },
      { text: 'Holidays\n\nClosed\u00a0on 25 December.\n\nDish: Fish soup; Price: 12.50', pageNumber: null, context: 'Harbour & Co > Opening hours > Holidays' },
    ]);
    for (const noise of ['tracking-code', 'color', 'Menu link', 'Enable JavaScript', 'https://']) expect(all(doc)).not.toContain(noise);
  });

  it('JSON: path: value lines, context the JSONPath of the enclosing object', async () => {
    const json = { name: 'Harbour Bistro', menu: { items: [{ dish: 'Fish soup', price: 12.5, vegan: false }, { dish: 'Apple cake', tags: ['sweet'] }] }, 'opening hours': null };
    const doc = await parseDocument('json', scratch.file('data.json', JSON.stringify(json)));
    expect(doc.sections).toEqual([
      {
        text: [
          'name: Harbour Bistro', '["opening hours"]: null',
          'menu.items[0].dish: Fish soup', 'menu.items[0].price: 12.5', 'menu.items[0].vegan: false',
          'menu.items[1].dish: Apple cake', 'menu.items[1].tags[0]: sweet',
        ].join('\n'),
        pageNumber: null,
        context: '$',
      },
    ]);
  });

  it('JSON: a large array is split into sections whose context is the common enclosing path', async () => {
    const items = Array.from({ length: 300 }, (_, i) => ({ sku: `SKU-${i}`, description: `Item number ${i} of the catalogue` }));
    const doc = await parseDocument('json', scratch.file('catalog.json', JSON.stringify({ catalog: { items } })));
    expect(doc.sections.length).toBeGreaterThan(3);
    for (const s of doc.sections) expect(s.context).toBe('$.catalog.items');
    const one = await parseDocument('json', scratch.file('one.json', JSON.stringify({ catalog: { items: [items[7]] } })));
    expect(one.sections).toEqual([{ text: 'catalog.items[0].sku: SKU-7\ncatalog.items[0].description: Item number 7 of the catalogue', pageNumber: null, context: '$.catalog.items[0]' }]);
    expect(sectionWith(doc, 'SKU-299').text).toContain('catalog.items[299].sku: SKU-299');
  });

  it('XML: element text and attributes with element paths, context the enclosing element', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
      <!-- price list -->
      <catalog>
        <book id="bk101"><title>XML Developer's Guide</title><price currency="EUR">44.95</price></book>
        <book id="bk102"><title>Midnight &amp; Rain</title></book>
        <note>Prices include VAT</note>
      </catalog>`;
    const doc = await parseDocument('xml', scratch.file('catalog.xml', xml));
    expect(doc.sections).toEqual([
      {
        text: [
          'catalog/book[1]/@id: bk101', "catalog/book[1]/title: XML Developer's Guide", 'catalog/book[1]/price/@currency: EUR',
          'catalog/book[1]/price: 44.95', 'catalog/book[2]/@id: bk102', 'catalog/book[2]/title: Midnight & Rain', 'catalog/note: Prices include VAT',
        ].join('\n'),
        pageNumber: null,
        context: '/catalog',
      },
    ]);
    const single = await parseDocument('xml', scratch.file('one.xml', '<shop><book><title>Solo</title><year>2001</year></book></shop>'));
    expect(single.sections[0]!.context).toBe('/shop/book');
  });

  it('plain text: UTF-8 and UTF-16 (both byte orders) by BOM, paragraphs kept, short ones grouped', async () => {
    const text = 'Harbour Bistro\n\nWe serve fish soup.\r\n\r\n\r\nCafé opens at 11:00.';
    const expected = 'Harbour Bistro\n\nWe serve fish soup.\n\nCafé opens at 11:00.';
    for (const [name, bytes] of [
      ['utf8.txt', Buffer.from(text)],
      ['bom8.txt', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])],
      ['le.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])],
      ['be.txt', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()])],
    ] as const) {
      const doc = await parseDocument('text', scratch.file(name, bytes));
      expect(doc.sections, name).toEqual([{ text: expected, pageNumber: null, context: null }]);
    }
    const long = Array.from({ length: 100 }, (_, i) => `Paragraph ${i} says something about the menu.`).join('\n\n');
    const doc = await parseDocument('text', scratch.file('long.txt', long));
    expect(doc.sections.length).toBeGreaterThan(1);
    expect(doc.sections.map((s) => s.text).join('\n\n')).toBe(long);
  });
});
