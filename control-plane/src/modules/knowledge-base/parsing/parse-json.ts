import { KbParseError, type ParsedDocument } from '../types.js';
import { commonPathPrefix, SectionGrouper, type TextUnit } from './sections.js';
import { readTextFile } from './text-decoding.js';

/**
 * JSON flattened to `path: value` lines (`menu.items[3].price: 12`), one per scalar, in
 * document order. The lines of one object stay together; consecutive objects are grouped
 * into sections of about SECTION_TARGET_CHARS whose context is the JSONPath of the object
 * enclosing them all (`$.menu.items[3]`, or `$.menu.items` for a run of items).
 * @throws KbParseError `corrupt` (not valid JSON), `empty` (no scalar values).
 */
export async function parseJson(filePath: string): Promise<ParsedDocument> {
  let value: unknown;
  try {
    value = JSON.parse(await readTextFile(filePath));
  } catch (err) {
    const e = new KbParseError('corrupt', `The file is not valid JSON${err instanceof SyntaxError ? `: ${err.message}` : ''}.`);
    (e as { cause?: unknown }).cause = err;
    throw e;
  }
  const grouper = new SectionGrouper({ contextOf: (units) => pathContext(units) });
  let index = 0;
  for (const unit of flatten(value, ['$'])) grouper.add(unit, index++);
  const sections = grouper.take();
  if (sections.length === 0) throw new KbParseError('empty', 'The JSON document has no values to index.');
  return { type: 'json', sections, pageCount: null };
}

/** Units: the scalar members of each object or array as lines, the object's path as context (segments joined by NUL). */
function* flatten(value: unknown, path: string[]): Generator<TextUnit> {
  if (value === null || typeof value !== 'object') {
    yield { text: `${linePath(path)}${scalar(value)}`, context: path.slice(0, -1).join('\u0000') || '$' };
    return;
  }
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((v, i) => [`[${i}]`, v])
    : Object.entries(value).map(([k, v]) => [keySegment(k), v]);
  const lines = entries.filter(([, v]) => v === null || typeof v !== 'object').map(([seg, v]) => `${linePath([...path, seg])}${scalar(v)}`);
  if (lines.length > 0) yield { text: lines.join('\n'), context: path.join('\u0000') };
  for (const [seg, v] of entries) if (v !== null && typeof v === 'object') yield* flatten(v, [...path, seg]);
}

function pathContext(units: TextUnit[]): string {
  const prefix = commonPathPrefix(units.map((u) => (u.context ?? '$').split('\u0000')));
  return prefix.length > 0 ? prefix.join('') : '$';
}

/** `menu.items[3].price: ` (the path without `$.`), empty for a document that is one scalar. */
function linePath(path: string[]): string {
  const p = path.slice(1).join('').replace(/^\./, '');
  return p ? `${p}: ` : '';
}

function keySegment(key: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function scalar(v: unknown): string {
  return typeof v === 'string' ? v : String(v);
}
