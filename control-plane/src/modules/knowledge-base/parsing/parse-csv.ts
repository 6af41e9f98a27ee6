import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { KbParseError, type ParsedDocument } from '../types.js';
import { RowSections } from './row-sections.js';
import { readTextChunks } from './text-decoding.js';

const DELIMITERS = [',', ';', '\t', '|'] as const;

/**
 * A CSV file streamed through csv-parse (never held whole): header row, then one
 * `header: value; …` line per row (see {@link RowSections}), context `Rows 2-40`. The
 * delimiter (comma, semicolon, tab or pipe) is the one most frequent outside quotes in the
 * first line; UTF-8, or UTF-16 with a BOM (Excel's "Unicode text").
 * @throws KbParseError `corrupt` (e.g. a quote never closed), `empty`.
 */
export async function parseCsv(filePath: string): Promise<ParsedDocument> {
  const chunks = readTextChunks(filePath);
  const first = await chunks.next();
  if (first.done) throw new KbParseError('empty', 'The CSV file has no text to index.');
  const delimiter = guessDelimiter(first.value);
  const source = Readable.from((async function* () {
    yield first.value;
    yield* chunks;
  })());
  const parser = source.pipe(
    parse({ delimiter, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, info: true, max_record_size: 1024 * 1024 }),
  );
  source.on('error', (err) => parser.destroy(err));
  const rows = new RowSections(null);
  try {
    for await (const record of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      rows.add(record.record, record.info.lines);
    }
  } catch (err) {
    const e = new KbParseError('corrupt', `The CSV file could not be read: ${csvProblem(err)}.`);
    (e as { cause?: unknown }).cause = err;
    throw e;
  }
  const sections = rows.finish();
  if (sections.length === 0) throw new KbParseError('empty', 'The CSV file has no text to index.');
  return { type: 'csv', sections, pageCount: null };
}

/** The delimiter most frequent outside quotes on the first line; comma on a tie or none. */
export function guessDelimiter(text: string): string {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\n' || ch === '\r')) break;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best = ',';
  for (const [d, n] of counts) if (n > counts.get(best)!) best = d;
  return best;
}

/** csv-parse's own messages name the line; other errors get a generic wording. */
function csvProblem(err: unknown): string {
  const code = (err as { code?: string }).code ?? '';
  if (code.startsWith('CSV_') && err instanceof Error) return err.message.replace(/\.$/, '');
  return 'the file is damaged';
}
