import type { ParsedSection } from '../types.js';

/**
 * Sections are grouped up to about this many characters (≈ 400 tokens of English text),
 * so that one section fills most of a 512-token chunk: rows, JSON/XML lines and short
 * paragraphs reach the chunker as paragraphs, while a longer paragraph is never cut here
 * (the chunker splits it at sentence boundaries).
 */
export const SECTION_TARGET_CHARS = 1_600;

/** One unit of text that must stay whole (a row, a `path: value` line, a paragraph). */
export interface TextUnit {
  text: string;
  /** Where the unit sits: a path (`$.menu.items[3]`, `/catalog/book[2]`) or a label. */
  context: string | null;
}

/**
 * Collects whole units into sections of about {@link SECTION_TARGET_CHARS}, in order. A
 * section's context comes from `contextOf(first, last)` of the units it holds.
 */
export class SectionGrouper {
  private readonly out: ParsedSection[] = [];
  private pending: { units: TextUnit[]; chars: number; first: number; last: number } | null = null;

  constructor(
    private readonly opts: {
      pageNumber?: number | null;
      /** Context of a section from its units and their positions (first and last index given to `add`). */
      contextOf: (units: TextUnit[], first: number, last: number) => string | null;
      separator?: string;
      targetChars?: number;
    },
  ) {}

  /** Adds one unit; `index` is its position (row number, line number) for the context. */
  add(unit: TextUnit, index: number): void {
    const text = unit.text.trim();
    if (!text) return;
    const target = this.opts.targetChars ?? SECTION_TARGET_CHARS;
    if (this.pending && this.pending.chars + text.length > target) this.flush();
    if (!this.pending) this.pending = { units: [], chars: 0, first: index, last: index };
    this.pending.units.push({ text, context: unit.context });
    this.pending.chars += text.length + 1;
    this.pending.last = index;
  }

  /** Ends the current section (e.g. at a new sheet or heading). */
  flush(): void {
    const p = this.pending;
    this.pending = null;
    if (!p || p.units.length === 0) return;
    this.out.push({
      text: p.units.map((u) => u.text).join(this.opts.separator ?? '\n'),
      pageNumber: this.opts.pageNumber ?? null,
      context: this.opts.contextOf(p.units, p.first, p.last),
    });
  }

  /** Flushes and returns every section made so far (and forgets them). */
  take(): ParsedSection[] {
    this.flush();
    return this.out.splice(0);
  }
}

/**
 * The longest common prefix of paths made of segments (`$`, `.menu`, `.items`, `[3]`), as
 * the context of a group of `path: value` lines from sibling or nested objects.
 */
export function commonPathPrefix(paths: string[][]): string[] {
  const first = paths[0] ?? [];
  let n = first.length;
  for (const p of paths) {
    let i = 0;
    while (i < n && i < p.length && p[i] === first[i]) i++;
    n = i;
  }
  return first.slice(0, n);
}

/** Collapses runs of blank lines and trailing spaces; keeps paragraph breaks. */
export function tidyText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\f\v\u00a0]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Splits text into paragraphs at blank lines. */
export function paragraphs(text: string): string[] {
  return tidyText(text)
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}
