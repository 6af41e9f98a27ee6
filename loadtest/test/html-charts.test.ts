import { describe, expect, it } from 'vitest';
import { barCompareSvg, escapeHtml, histogramSvg, htmlPage, htmlTable, lineChartSvg, niceTicks, shortNumber, stackedBarsSvg } from '../src/html/charts.js';
import { markupProblems, occurrences } from './html-markup.js';

/** The `width` attributes of the `<rect>`s with a hover title starting with `prefix`. */
function rectWidths(svg: string, prefix: string): number[] {
  return [...svg.matchAll(/<rect [^>]*width="([\d.]+)"[^>]*><title>([^<]*)<\/title>/g)].filter((m) => m[2]!.startsWith(prefix)).map((m) => Number(m[1]));
}

function rectHeights(svg: string): number[] {
  return [...svg.matchAll(/<rect [^>]*height="([\d.]+)"[^>]*><title>/g)].map((m) => Number(m[1]));
}

describe('escapeHtml', () => {
  it('escapes the five characters that break text or a quoted attribute', () => {
    expect(escapeHtml(`<a href="x">Tom & Jerry's</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;');
  });
});

describe('niceTicks and shortNumber', () => {
  it('steps by 1, 2 or 5 times a power of ten and covers the range', () => {
    expect(niceTicks(0, 100, 5)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(0, 7, 4)).toEqual([0, 2, 4, 6]);
    expect(niceTicks(0, 0.3, 3)).toEqual([0, 0.1, 0.2, 0.3]);
  });

  it('writes short labels', () => {
    expect([shortNumber(0.125), shortNumber(12.34), shortNumber(150), shortNumber(12_500), shortNumber(Number.NaN)]).toEqual(['0.13', '12.3', '150', '12.5k', '-']);
  });
});

describe('histogramSvg', () => {
  const hist = { upperBounds: [50, 100, 150, 200], counts: [2, 8, 4, 1, 1] };

  it('draws one bar per non-empty bucket, heights proportional to the counts', () => {
    const svg = histogramSvg(hist, { title: 'Barge-in' });
    expect(markupProblems(svg)).toEqual([]);
    const heights = rectHeights(svg);
    expect(heights).toHaveLength(5);
    expect(heights[1]! / heights[0]!).toBeCloseTo(4, 1);
    expect(heights[4]! / heights[2]!).toBeCloseTo(0.25, 1);
    expect(svg).toContain('100–150 ms: 4 (25.0 %)');
    expect(svg).toContain('&gt; 200'); // the open last bucket
  });

  it('places the target line inside the bucket holding its value, with its label', () => {
    const bars = 5;
    const left = 48;
    const plotW = 640 - left - 12;
    const svg = histogramSvg(hist, { target: { value: 125, label: 'p95 <= 150 ms' } });
    const x = Number(/<line x1="([\d.]+)" x2="\1" [^>]*stroke-dasharray/.exec(svg)![1]);
    expect(x).toBeCloseTo(left + 2.5 * (plotW / bars), 0); // halfway through the 100–150 bucket
    expect(svg).toContain('p95 &lt;= 150 ms');
  });

  it('thins the bucket labels of a many-bucket histogram so none overlap, keeping the open last one', () => {
    const upperBounds = Array.from({ length: 19 }, (_, i) => (i + 1) * 10);
    const svg = histogramSvg({ upperBounds, counts: upperBounds.map(() => 1).concat(1) });
    const labels = [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+" text-anchor="middle">([^<]*)<\/text>/g)].map((m) => ({ x: Number(m[1]), text: m[2]! }));
    expect(labels.at(-1)!.text).toBe('&gt; 190');
    expect(labels.length).toBeLessThan(20);
    for (let i = 1; i < labels.length; i++) expect(labels[i]!.x - labels[i - 1]!.x).toBeGreaterThanOrEqual(40);
  });

  it('says "no data" instead of drawing an empty histogram', () => {
    const svg = histogramSvg({ upperBounds: [1, 2], counts: [0, 0, 0] }, { title: 'x' });
    expect(svg).toContain('no data');
    expect(markupProblems(svg)).toEqual([]);
  });
});

describe('stackedBarsSvg', () => {
  it('stacks the segments on one scale across rows and writes each total', () => {
    const svg = stackedBarsSvg(
      [
        { label: 'p50', segments: [{ name: 'stt', value: 100 }, { name: 'llm', value: 300 }] },
        { label: 'p95', segments: [{ name: 'stt', value: 200 }, { name: 'llm', value: 600 }, { name: 'overhead', value: null }] },
      ],
      { title: 'Turn stages' },
    );
    expect(markupProblems(svg)).toEqual([]);
    expect(rectWidths(svg, 'p95 · stt')[0]! / rectWidths(svg, 'p50 · stt')[0]!).toBeCloseTo(2, 1);
    expect(rectWidths(svg, 'p95 · llm')[0]! / rectWidths(svg, 'p50 · llm')[0]!).toBeCloseTo(2, 1);
    expect(svg).toContain('>400 ms<');
    expect(svg).toContain('>800 ms<');
    expect(occurrences(svg, '· overhead')).toBe(0); // a missing value draws nothing
    expect(svg).toContain('>overhead<'); // but stays in the legend
  });
});

describe('barCompareSvg', () => {
  it('draws each value on a shared scale and writes "-" for a missing one', () => {
    const svg = barCompareSvg([
      { label: 'GET agent', values: [{ name: 'platform', value: 3000 }, { name: 'bare', value: 12_000 }] },
      { label: 'create', values: [{ name: 'platform', value: 1500 }, { name: 'bare', value: null }] },
    ]);
    expect(markupProblems(svg)).toEqual([]);
    expect(rectWidths(svg, 'GET agent · bare')[0]! / rectWidths(svg, 'GET agent · platform')[0]!).toBeCloseTo(4, 1);
    expect(rectWidths(svg, 'create · bare')).toEqual([]);
    expect(svg).toMatch(/>-<\/text>/);
  });
});

describe('lineChartSvg', () => {
  it('draws one path per series and breaks a line at a missing point', () => {
    const svg = lineChartSvg(
      [
        { name: 'gateway', points: [[0, 10], [1, 50], [2, null], [3, 60]] },
        { name: 'relay', points: [[0, 5], [1, 8], [2, 9], [3, 9]] },
      ],
      { title: 'CPU', unit: '%', xLabel: 's', target: { value: 120, label: '60 % of 2 cores' } },
    );
    expect(markupProblems(svg)).toEqual([]);
    const paths = [...svg.matchAll(/<path d="([^"]*)"/g)].map((m) => m[1]!);
    expect(paths).toHaveLength(2);
    expect(occurrences(paths[0]!, 'M')).toBe(2);
    expect(occurrences(paths[1]!, 'M')).toBe(1);
    expect(occurrences(paths[1]!, 'L')).toBe(3);
    expect(svg).toContain('60 % of 2 cores');
  });

  it('says "no data" when no point is finite', () => {
    expect(lineChartSvg([{ name: 'a', points: [[0, null]] }])).toContain('no data');
  });
});

describe('htmlTable and htmlPage', () => {
  it('builds a self-contained, well-formed page with escaped names', () => {
    const page = htmlPage('Bench <run> & "co"', [
      { heading: 'Targets & checks', html: htmlTable(['name', 'value'], [['<script>alert(1)</script>', { text: 'PASS', className: 'pass' }]]) },
      { heading: 'Chart', html: histogramSvg({ upperBounds: [1], counts: [1, 1] }, { title: `x<y & "z"` }) },
    ]);
    expect(markupProblems(page)).toEqual([]);
    expect(page).not.toContain('<script');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).toContain('<td class="pass">PASS</td>');
    expect(page).toContain('<title>Bench &lt;run&gt; &amp; &quot;co&quot;</title>');
    expect(page).not.toMatch(/(src|href)=|@import|url\(/); // nothing fetched from elsewhere
  });

  it('reports a broken page (the check itself can fail)', () => {
    expect(markupProblems('<div><svg></div>')).not.toEqual([]);
    expect(markupProblems('<p>a < b</p>')).not.toEqual([]);
    expect(markupProblems('<p>a & b</p>')).not.toEqual([]);
  });
});
