import ExcelJS from 'exceljs';
import { KbParseError, type ParsedDocument, type ParsedSection } from '../types.js';
import { officeReadError } from './office-encryption.js';
import { RowSections } from './row-sections.js';

/**
 * A workbook read with exceljs's streaming reader (rows are visited one at a time, never a
 * whole workbook object graph): each sheet's first non-empty row is its header, every
 * later row one `header: value; …` line, grouped into sections with context
 * `Sheet "Prices", rows 2-40`. Formulas give their cached result, dates an ISO date,
 * rich text its plain text. `pageCount` is the number of sheets.
 * @throws KbParseError `corrupt` (not a readable XLSX, e.g. truncated), `encrypted` (password-protected), `empty`.
 */
export async function parseXlsx(filePath: string): Promise<ParsedDocument> {
  const sections: ParsedSection[] = [];
  let sheets = 0;
  try {
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(filePath, {
      worksheets: 'emit',
      sharedStrings: 'cache',
      // Styles say which numbers are dates; hyperlinks and entries are not needed.
      styles: 'cache',
      hyperlinks: 'ignore',
      entries: 'ignore',
    });
    for await (const sheet of reader) {
      sheets++;
      const name = (sheet as unknown as { name?: string }).name ?? `Sheet${sheets}`;
      const rows = new RowSections(`Sheet "${name}"`);
      for await (const row of sheet) {
        const cells: string[] = [];
        row.eachCell({ includeEmpty: false }, (cell, col) => {
          cells[col - 1] = cellText(cell.value);
        });
        rows.add(Array.from(cells, (c) => c ?? ''), row.number);
      }
      for (const s of rows.finish()) sections.push(s.context ? s : { ...s, context: `Sheet "${name}"` });
    }
  } catch (err) {
    throw await officeReadError(filePath, 'XLSX', err);
  }
  if (sections.length === 0) throw new KbParseError('empty', 'The XLSX workbook has no text to index.');
  return { type: 'xlsx', sections, pageCount: sheets };
}

/** What a cell shows, as text. */
export function cellText(value: ExcelJS.CellValue): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) {
    const iso = value.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.slice(0, 19).replace('T', ' ');
  }
  if (typeof value === 'object') {
    if ('richText' in value) return value.richText.map((r) => r.text).join('');
    if ('formula' in value || 'sharedFormula' in value) return cellText((value as ExcelJS.CellFormulaValue).result as ExcelJS.CellValue);
    if ('hyperlink' in value) return String((value as ExcelJS.CellHyperlinkValue).text ?? '');
    if ('error' in value) return '';
    return '';
  }
  return String(value);
}
