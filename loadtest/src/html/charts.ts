/**
 * Dependency-free inline SVG charts and a page shell for the benchmark reports.
 *
 * The reports are opened from disk on machines without network access, so every page is
 * self-contained: no CDN, no external script or stylesheet, no fonts. Each chart is a
 * plain `<svg>` string; every piece of text in it goes through {@link escapeHtml}.
 * Non-finite values (null, NaN, Infinity) are skipped rather than drawn as zero.
 */
import type { Histogram } from '../calls/call-results.js';

/** Escapes `& < > " '` so `text` is safe in HTML text and in quoted attribute values (SVG included). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Colours assigned to series in order (colour-blind friendly, Okabe-Ito). */
export const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#f0e442', '#000000'] as const;

/** The colour of the `i`-th series (cycles through {@link PALETTE}). */
export function colourAt(i: number): string {
  return PALETTE[i % PALETTE.length]!;
}

/** Short label of a number: no more than 3 significant decimals, thousands as `k`. */
export function shortNumber(v: number): string {
  if (!Number.isFinite(v)) return '-';
  const a = Math.abs(v);
  if (a >= 10_000) return `${trim((v / 1000).toFixed(a >= 100_000 ? 0 : 1))}k`;
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return trim(v.toFixed(1));
  return trim(v.toFixed(2));
}

function trim(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** About `count` round tick values (1, 2 or 5 × 10^k apart) covering `[min, max]`. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) return [min];
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/** Common chart options. */
export interface ChartOptions {
  /** Drawn above the plot and used as the accessible name. */
  title?: string;
  /** Unit of the values, shown on the value axis (e.g. `ms`, `%`). */
  unit?: string;
  /** Pixel size of the SVG viewBox (the SVG scales to its container). */
  width?: number;
  height?: number;
}

/** A reference line such as "p95 <= 150 ms" at `value` (in the chart's unit). */
export interface TargetLine {
  value: number;
  label: string;
}

const FONT = 'font-family="system-ui, sans-serif" font-size="11"';

function svgOpen(width: number, height: number, title: string | undefined): string {
  const name = escapeHtml(title ?? 'chart');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="100%" style="max-width:${width}px" role="img" aria-label="${name}" ${FONT}>` +
    (title ? `<text x="${width / 2}" y="16" text-anchor="middle" font-size="13" font-weight="600">${name}</text>` : '')
  );
}

function noData(width: number, height: number, title: string | undefined): string {
  return `${svgOpen(width, height, title)}<text x="${width / 2}" y="${height / 2}" text-anchor="middle" fill="#777">no data</text></svg>`;
}

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${r(x)}" y="${r(y)}"${attrs ? ` ${attrs}` : ''}>${escapeHtml(s)}</text>`;
}

function r(v: number): string {
  return String(Math.round(v * 10) / 10);
}

function finite(v: number | null | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

function legend(names: string[], x: number, y: number): string {
  let out = '';
  let cx = x;
  names.forEach((name, i) => {
    out += `<rect x="${r(cx)}" y="${r(y - 9)}" width="10" height="10" fill="${colourAt(i)}"/>` + text(cx + 14, y, name);
    cx += 24 + name.length * 6.5;
  });
  return out;
}

/** Options of {@link histogramSvg}. */
export interface HistogramOptions extends ChartOptions {
  /** A vertical line at a limit, e.g. `{ value: 150, label: 'p95 <= 150 ms' }`. */
  target?: TargetLine;
}

/**
 * One bar per bucket of `hist`, equally wide whatever the bucket's span (bounds are usually
 * exponential), labelled with the bucket's upper bound ("≤ 20"; the open last bucket "> 1000").
 * The target line sits proportionally inside the bucket that holds its value.
 */
export function histogramSvg(hist: Histogram, opts: HistogramOptions = {}): string {
  const width = opts.width ?? 640;
  const height = opts.height ?? 260;
  const total = hist.counts.reduce((a, b) => a + b, 0);
  if (hist.counts.length === 0 || total === 0) return noData(width, height, opts.title);
  const unit = opts.unit ?? 'ms';
  const left = 48;
  const right = 12;
  const top = opts.title ? 40 : 16;
  const bottom = 44;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const n = hist.counts.length;
  const barW = plotW / n;
  const maxCount = Math.max(...hist.counts);
  const ticks = niceTicks(0, maxCount, 4);
  const yMax = Math.max(maxCount, ticks[ticks.length - 1] ?? maxCount);
  const y = (c: number) => top + plotH - (c / yMax) * plotH;
  let out = svgOpen(width, height, opts.title);
  for (const t of ticks) {
    out += `<line x1="${left}" x2="${width - right}" y1="${r(y(t))}" y2="${r(y(t))}" stroke="#e3e3e3"/>`;
    out += text(left - 4, y(t) + 4, shortNumber(t), 'text-anchor="end"');
  }
  const labelEvery = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(plotW / 44))));
  hist.counts.forEach((count, i) => {
    const x = left + i * barW;
    const label = bucketLabel(hist.upperBounds, i, unit);
    if (count > 0) {
      out += `<rect x="${r(x + 1)}" y="${r(y(count))}" width="${r(Math.max(1, barW - 2))}" height="${r(top + plotH - y(count))}" fill="${colourAt(0)}">`;
      out += `<title>${escapeHtml(`${label}: ${count} (${((count / total) * 100).toFixed(1)} %)`)}</title></rect>`;
    }
    if (i === n - 1 || (i % labelEvery === 0 && n - 1 - i >= labelEvery)) {
      out += text(x + barW / 2, top + plotH + 14, axisLabel(hist.upperBounds, i), 'text-anchor="middle"');
    }
  });
  out += `<line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="#555"/>`;
  out += text(left + plotW / 2, height - 6, unit ? `${unit} (bucket upper bound)` : 'bucket upper bound', 'text-anchor="middle" fill="#555"');
  out += text(12, top + plotH / 2, 'count', `text-anchor="middle" fill="#555" transform="rotate(-90 12 ${r(top + plotH / 2)})"`);
  if (opts.target && finite(opts.target.value)) {
    const tx = left + bucketPosition(hist.upperBounds, opts.target.value) * barW;
    out += `<line x1="${r(tx)}" x2="${r(tx)}" y1="${top - 4}" y2="${top + plotH}" stroke="#d55e00" stroke-width="2" stroke-dasharray="5 3"/>`;
    const anchor = tx > left + plotW * 0.7 ? 'end' : 'start';
    out += text(anchor === 'end' ? tx - 4 : tx + 4, top + 8, opts.target.label, `text-anchor="${anchor}" fill="#d55e00" font-weight="600"`);
  }
  return `${out}</svg>`;
}

function axisLabel(upperBounds: number[], i: number): string {
  if (i < upperBounds.length) return `≤ ${shortNumber(upperBounds[i]!)}`;
  return upperBounds.length === 0 ? 'all' : `> ${shortNumber(upperBounds[upperBounds.length - 1]!)}`;
}

function bucketLabel(upperBounds: number[], i: number, unit: string): string {
  const u = unit ? ` ${unit}` : '';
  if (i >= upperBounds.length) return upperBounds.length === 0 ? 'all' : `> ${shortNumber(upperBounds[upperBounds.length - 1]!)}${u}`;
  const lower = i === 0 ? null : upperBounds[i - 1]!;
  return lower === null ? `≤ ${shortNumber(upperBounds[i]!)}${u}` : `${shortNumber(lower)}–${shortNumber(upperBounds[i]!)}${u}`;
}

/** Position of `value` in bar units: bucket index plus the fraction of the way through it. */
function bucketPosition(upperBounds: number[], value: number): number {
  for (let i = 0; i < upperBounds.length; i++) {
    const hi = upperBounds[i]!;
    if (value <= hi) {
      const lo = i === 0 ? Math.min(0, hi) : upperBounds[i - 1]!;
      return i + (hi > lo ? (value - lo) / (hi - lo) : 1);
    }
  }
  return upperBounds.length + 0.5;
}

/** One horizontal bar made of named segments (e.g. a turn's stages). */
export interface StackedRow {
  label: string;
  segments: { name: string; value: number | null }[];
}

/**
 * Horizontal stacked bars on one shared scale, one per row, with the total at the end and a
 * legend; a segment's colour follows its name's first appearance, so "stt" is the same colour
 * in every row. Negative and missing values are drawn as nothing (the total counts them as 0).
 */
export function stackedBarsSvg(rows: StackedRow[], opts: ChartOptions = {}): string {
  const width = opts.width ?? 640;
  const names = [...new Set(rows.flatMap((row) => row.segments.map((s) => s.name)))];
  const sums = rows.map((row) => row.segments.reduce((a, s) => a + (finite(s.value) && s.value > 0 ? s.value : 0), 0));
  const maxSum = Math.max(0, ...sums);
  const rowH = 30;
  const top = opts.title ? 40 : 16;
  const height = opts.height ?? top + rows.length * rowH + 56;
  if (rows.length === 0 || maxSum === 0) return noData(width, opts.height ?? 160, opts.title);
  const unit = opts.unit ?? 'ms';
  const left = Math.min(200, 12 + Math.max(...rows.map((row) => row.label.length)) * 6.5);
  const plotW = width - left - 64;
  const scale = plotW / maxSum;
  let out = svgOpen(width, height, opts.title);
  rows.forEach((row, ri) => {
    const y = top + ri * rowH;
    out += text(left - 6, y + rowH / 2 + 3, row.label, 'text-anchor="end"');
    let x = left;
    for (const seg of row.segments) {
      if (!finite(seg.value) || seg.value <= 0) continue;
      const w = seg.value * scale;
      out += `<rect x="${r(x)}" y="${y + 4}" width="${r(w)}" height="${rowH - 8}" fill="${colourAt(names.indexOf(seg.name))}">`;
      out += `<title>${escapeHtml(`${row.label} · ${seg.name}: ${shortNumber(seg.value)} ${unit}`.trimEnd())}</title></rect>`;
      if (w > 34) out += text(x + w / 2, y + rowH / 2 + 4, shortNumber(seg.value), 'text-anchor="middle" fill="#fff"');
      x += w;
    }
    out += text(x + 4, y + rowH / 2 + 4, `${shortNumber(sums[ri]!)} ${unit}`.trimEnd());
  });
  const axisY = top + rows.length * rowH + 4;
  for (const t of niceTicks(0, maxSum, 5)) {
    const x = left + t * scale;
    out += `<line x1="${r(x)}" x2="${r(x)}" y1="${axisY}" y2="${axisY + 4}" stroke="#555"/>` + text(x, axisY + 15, shortNumber(t), 'text-anchor="middle" fill="#555"');
  }
  out += legend(names, left, axisY + 38);
  return `${out}</svg>`;
}

/** A group of bars side by side (e.g. platform and bare for one scenario). */
export interface CompareRow {
  label: string;
  values: { name: string; value: number | null }[];
}

/**
 * Grouped horizontal bars: for each row one bar per named value, on one shared scale, each
 * labelled with its figure; a missing value is written "-" with no bar.
 */
export function barCompareSvg(rows: CompareRow[], opts: ChartOptions = {}): string {
  const width = opts.width ?? 640;
  const names = [...new Set(rows.flatMap((row) => row.values.map((v) => v.name)))];
  const max = Math.max(0, ...rows.flatMap((row) => row.values.map((v) => (finite(v.value) ? v.value : 0))));
  const barH = 16;
  // Each group as tall as its own bars, so a one-value row (e.g. "requested") leaves no hole.
  const groupTops = rows.reduce<number[]>((acc, row) => [...acc, acc[acc.length - 1]! + Math.max(1, row.values.length) * barH + 14], [0]);
  const groupsH = groupTops[groupTops.length - 1]!;
  const top = opts.title ? 40 : 16;
  const height = opts.height ?? top + groupsH + 40;
  if (rows.length === 0) return noData(width, opts.height ?? 160, opts.title);
  const unit = opts.unit ? ` ${opts.unit}` : '';
  const left = Math.min(220, 12 + Math.max(...rows.map((row) => row.label.length)) * 6.5);
  const plotW = width - left - 80;
  const scale = max > 0 ? plotW / max : 0;
  let out = svgOpen(width, height, opts.title);
  rows.forEach((row, ri) => {
    const y0 = top + groupTops[ri]!;
    out += text(left - 6, y0 + (row.values.length * barH) / 2 + 4, row.label, 'text-anchor="end"');
    row.values.forEach((v, vi) => {
      const y = y0 + vi * barH;
      const w = finite(v.value) && v.value > 0 ? v.value * scale : 0;
      if (w > 0) {
        out += `<rect x="${left}" y="${y + 1}" width="${r(w)}" height="${barH - 2}" fill="${colourAt(names.indexOf(v.name))}">`;
        out += `<title>${escapeHtml(`${row.label} · ${v.name}: ${finite(v.value) ? shortNumber(v.value) : '-'}${unit}`)}</title></rect>`;
      }
      out += text(left + w + 4, y + barH - 4, `${finite(v.value) ? shortNumber(v.value) : '-'}${unit}`);
    });
  });
  out += legend(names, left, top + groupsH + 16);
  return `${out}</svg>`;
}

/** A named line of `[x, y]` points. */
export interface LineSeries {
  name: string;
  points: [number, number | null][];
}

/** Options of {@link lineChartSvg}. */
export interface LineChartOptions extends ChartOptions {
  /** Label of the x axis (e.g. `s since start`). */
  xLabel?: string;
  /** Lower end of the y axis; 0 by default (set it to null to fit the data). */
  yMin?: number | null;
  target?: TargetLine;
}

/**
 * Lines over a shared x and y scale with a legend. Points with a non-finite y break the line
 * (a gap, not a drop to zero).
 */
export function lineChartSvg(series: LineSeries[], opts: LineChartOptions = {}): string {
  const width = opts.width ?? 640;
  const height = opts.height ?? 260;
  const pts = series.flatMap((s) => s.points.filter((p): p is [number, number] => finite(p[0]) && finite(p[1])));
  if (pts.length === 0) return noData(width, height, opts.title);
  const xs = pts.map((p) => p[0]);
  const ys = pts.map((p) => p[1]);
  if (opts.target && finite(opts.target.value)) ys.push(opts.target.value);
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs) > xMin ? Math.max(...xs) : xMin + 1;
  const yLow = opts.yMin === null ? Math.min(...ys) : Math.min(opts.yMin ?? 0, ...ys);
  const yTicks = niceTicks(yLow, Math.max(...ys) > yLow ? Math.max(...ys) : yLow + 1, 4);
  const yMin = Math.min(yLow, yTicks[0]!);
  const yMax = Math.max(Math.max(...ys), yTicks[yTicks.length - 1]!, yMin + 1e-9);
  const left = 52;
  const right = 12;
  const top = opts.title ? 40 : 16;
  const bottom = 58;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const sx = (x: number) => left + ((x - xMin) / (xMax - xMin)) * plotW;
  const sy = (y: number) => top + plotH - ((y - yMin) / (yMax - yMin)) * plotH;
  let out = svgOpen(width, height, opts.title);
  for (const t of yTicks) {
    out += `<line x1="${left}" x2="${width - right}" y1="${r(sy(t))}" y2="${r(sy(t))}" stroke="#e3e3e3"/>` + text(left - 4, sy(t) + 4, shortNumber(t), 'text-anchor="end"');
  }
  for (const t of niceTicks(xMin, xMax, 6)) out += text(sx(t), top + plotH + 14, shortNumber(t), 'text-anchor="middle" fill="#555"');
  out += `<line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="#555"/>`;
  if (opts.xLabel) out += text(left + plotW / 2, top + plotH + 30, opts.xLabel, 'text-anchor="middle" fill="#555"');
  if (opts.unit) out += text(12, top + plotH / 2, opts.unit, `text-anchor="middle" fill="#555" transform="rotate(-90 12 ${r(top + plotH / 2)})"`);
  if (opts.target && finite(opts.target.value)) {
    const ty = sy(opts.target.value);
    out += `<line x1="${left}" x2="${width - right}" y1="${r(ty)}" y2="${r(ty)}" stroke="#d55e00" stroke-dasharray="5 3"/>`;
    out += text(width - right - 4, ty - 4, opts.target.label, 'text-anchor="end" fill="#d55e00"');
  }
  series.forEach((s, i) => {
    let d = '';
    let pen = 'M';
    for (const [x, y] of s.points) {
      if (!finite(x) || !finite(y)) {
        pen = 'M';
        continue;
      }
      d += `${pen}${r(sx(x))} ${r(sy(y))} `;
      pen = 'L';
    }
    if (d) out += `<path d="${d.trim()}" fill="none" stroke="${colourAt(i)}" stroke-width="2"><title>${escapeHtml(s.name)}</title></path>`;
  });
  out += legend(
    series.map((s) => s.name),
    left,
    height - 8,
  );
  return `${out}</svg>`;
}

/** A cell of {@link htmlTable}: plain text, or text with a CSS class (e.g. `pass`, `fail`, `num`). */
export type Cell = string | { text: string; className: string };

/** An HTML table; every cell is escaped. Columns after the first are right-aligned (`num`) unless a cell says otherwise. */
export function htmlTable(headers: readonly string[], rows: Cell[][]): string {
  const cell = (tag: 'td' | 'th', c: Cell, i: number) => {
    const [t, cls] = typeof c === 'string' ? [c, i === 0 ? '' : 'num'] : [c.text, c.className];
    return `<${tag}${cls ? ` class="${escapeHtml(cls)}"` : ''}>${escapeHtml(t)}</${tag}>`;
  };
  const head = `<tr>${headers.map((h, i) => cell('th', h, i)).join('')}</tr>`;
  const body = rows.map((row) => `<tr>${row.map((c, i) => cell('td', c, i)).join('')}</tr>`).join('\n');
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody>\n</table>`;
}

/** One section of a page: `html` is inserted as is (build it from the functions above). */
export interface PageSection {
  heading: string;
  html: string;
}

const STYLESHEET = `
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1000px;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.15em;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0;font-size:0.9em}th,td{padding:4px 10px;border-bottom:1px solid #eee;text-align:left}
th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#fff;background:#1a7f37;text-align:center}.fail{color:#fff;background:#cf222e;text-align:center}.na{color:#666;background:#eee;text-align:center}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}.muted{color:#666}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts>figure{margin:0;flex:1 1 460px}
figcaption{font-size:0.85em;color:#555}
`;

/** What a page may add to the shared shell: more CSS, and a script run at the end of the body (both inline). */
export interface PageExtras {
  style?: string;
  script?: string;
}

/** A complete, self-contained HTML document: inline stylesheet, `title` as `<h1>`, then each section under an `<h2>`. */
export function htmlPage(title: string, sections: PageSection[], extras: PageExtras = {}): string {
  if (extras.script?.includes('</script') || extras.style?.includes('</style')) throw new Error('htmlPage: an inline script or style must not close its own element');
  const body = sections.map((s) => `<section>\n<h2>${escapeHtml(s.heading)}</h2>\n${s.html}\n</section>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLESHEET}${extras.style ?? ''}</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
${extras.script ? `<script>\n${extras.script}\n</script>\n` : ''}</body>
</html>
`;
}
