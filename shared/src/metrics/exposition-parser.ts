/** One sample line of a Prometheus text exposition. */
export interface PrometheusSample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** A parsed exposition: the samples in order, and each family's declared `# TYPE`. */
export interface PrometheusExposition {
  samples: PrometheusSample[];
  types: ReadonlyMap<string, string>;
  /** Sum of the samples named `name` whose labels include every pair of `labels`. */
  value(name: string, labels?: Readonly<Record<string, string>>): number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** Prometheus reads values with Go's ParseFloat: NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: number): number {
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(text);
  if (special) return special[2]!.toLowerCase() === 'nan' ? Number.NaN : special[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  const v = Number(text);
  if (text === '' || Number.isNaN(v)) throw new Error(`line ${line}: bad sample value "${text}"`);
  return v;
}

/** Reads `{a="x",b="y"}` from `s` at `i` (at the `{`); returns the labels and the index after `}`. */
function parseLabels(s: string, start: number, line: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (s[i] !== '}') {
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`line ${line}: label without "="`);
    const name = s.slice(i, eq);
    if (!LABEL_NAME.test(name) || name.startsWith('__')) throw new Error(`line ${line}: illegal label name "${name}"`);
    if (s[eq + 1] !== '"') throw new Error(`line ${line}: label value of ${name} is not quoted`);
    let value = '';
    let j = eq + 2;
    for (; j < s.length && s[j] !== '"'; j++) {
      if (s[j] !== '\\') value += s[j];
      else {
        const next = s[++j];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`line ${line}: bad escape in label ${name}`);
      }
    }
    if (j >= s.length) throw new Error(`line ${line}: unterminated label value`);
    if (name in labels) throw new Error(`line ${line}: label ${name} repeated`);
    labels[name] = value;
    i = j + 1;
    if (s[i] === ',') i++;
    else if (s[i] !== '}') throw new Error(`line ${line}: expected "," or "}" after label ${name}`);
  }
  return [labels, i + 1];
}

/**
 * Parses the Prometheus text format (version 0.0.4) strictly: metric and label names must
 * be legal, every sample must belong to a family declared by `# TYPE` (or its `_bucket`,
 * `_sum`, `_count` series), values must be numbers. Throws naming the line otherwise. For
 * tests and the load generator, which read a gateway's `/metrics`.
 */
export function parsePrometheusText(text: string): PrometheusExposition {
  const samples: PrometheusSample[] = [];
  const types = new Map<string, string>();
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(raw);
      if (!m) return; // a plain comment
      const name = m[2]!;
      if (!METRIC_NAME.test(name)) throw new Error(`line ${line}: illegal metric name "${name}"`);
      if (m[1] === 'TYPE') {
        if (!TYPES.has(m[3] ?? '')) throw new Error(`line ${line}: unknown type "${m[3]}"`);
        if (types.has(name)) throw new Error(`line ${line}: ${name} declared twice`);
        types.set(name, m[3]!);
      }
      return;
    }
    const nameEnd = raw.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`line ${line}: no sample value`);
    const name = raw.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw new Error(`line ${line}: illegal metric name "${name}"`);
    let labels: Record<string, string> = {};
    let rest = nameEnd;
    if (raw[nameEnd] === '{') [labels, rest] = parseLabels(raw, nameEnd, line);
    const parts = raw.slice(rest).trim().split(/\s+/);
    if (parts.length < 1 || parts.length > 2 || parts[0] === '') throw new Error(`line ${line}: expected a value and an optional timestamp`);
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(family)) throw new Error(`line ${line}: sample ${name} has no # TYPE`);
    samples.push({ name, labels, value: parseValue(parts[0]!, line) });
  });
  return {
    samples,
    types,
    value(name, want = {}) {
      return samples
        .filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0);
    },
  };
}
