import type { ParsedSection } from '../types.js';
import { SectionGrouper } from './sections.js';

/**
 * Tabular rows (XLSX sheets, CSV) as sections: the first row with two or more values is the
 * header (single-value rows before it, such as a title, stay plain lines); each
 * later row becomes one line of `header: value` pairs (`Dish: Fish soup; Price: 12`), so a
 * row is understandable on its own, empty cells left out; cells beyond the header are
 * named by their column letter. Rows are grouped into sections of about
 * SECTION_TARGET_CHARS, with context `<label>, rows 2-40` (1-based row numbers as the file
 * shows them; `label` is `Sheet "Prices"` or null for CSV).
 */
export class RowSections {
  private header: string[] | null = null;
  private readonly grouper: SectionGrouper;

  constructor(label: string | null) {
    this.grouper = new SectionGrouper({
      contextOf: (_units, first, last) => {
        const rows = first === last ? `row ${first}` : `rows ${first}-${last}`;
        return label ? `${label}, ${rows}` : rows.charAt(0).toUpperCase() + rows.slice(1);
      },
    });
  }

  /** Adds row `rowNumber` (1-based) with its cells' display text, empty strings for blank cells. */
  add(cells: string[], rowNumber: number): void {
    const filled = cells.filter((c) => c.trim());
    if (filled.length === 0) return;
    if (!this.header) {
      if (filled.length === 1) {
        // A title above the table ("Price list 2024"), or a one-column list: kept as a plain line.
        this.grouper.add({ text: filled[0]!.replace(/\s+/g, ' '), context: null }, rowNumber);
        return;
      }
      this.header = cells.map((c) => c.replace(/\s+/g, ' ').trim());
      return;
    }
    const header = this.header;
    const line = cells
      .map((raw, i) => {
        const value = raw.replace(/\s*\n\s*/g, ' / ').trim();
        return value ? `${header[i] || `Column ${columnLetter(i)}`}: ${value}` : '';
      })
      .filter(Boolean)
      .join('; ');
    this.grouper.add({ text: line, context: null }, rowNumber);
  }

  /** The sections, plus the header row alone when no data row followed it. */
  finish(): ParsedSection[] {
    const sections = this.grouper.take();
    if (sections.length === 0 && this.header) {
      const text = this.header.filter(Boolean).join('; ');
      if (text) sections.push({ text, pageNumber: null, context: null });
    }
    return sections;
  }
}

/** 0 → A, 25 → Z, 26 → AA. */
export function columnLetter(index: number): string {
  let n = index + 1;
  let out = '';
  while (n > 0) {
    const r = (n - 1) % 26;
    out = String.fromCharCode(65 + r) + out;
    n = Math.floor((n - 1) / 26);
  }
  return out;
}
