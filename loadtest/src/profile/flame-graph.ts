/**
 * A flame graph of a CPU profile as one self-contained HTML page (no network, like the other
 * reports): the busy call tree with the root at the top and callees below, each box as wide as
 * its share of the busy time, coloured by where its code comes from; click a box to zoom to it,
 * the root to zoom out. Under it, the functions and the packages that took the most self time:
 * where the time goes, at a glance (#5).
 */
import { escapeHtml, htmlPage, htmlTable } from '../html/charts.js';
import type { FlameFrame, FrameCategory, ProfileTree } from './cpu-profile-tree.js';

/** Width of the graph's viewBox, px (the page's content width, so that its text is not scaled). */
export const FLAME_WIDTH = 1000;
/** Height of one row (stack depth), px. */
export const FLAME_ROW = 17;
/** Frames narrower than this share of the busy time are not drawn (their parent's box covers them). */
export const DEFAULT_MIN_SHARE = 0.001;
/** Monospace characters that fit in `px` of a box (11 px font). */
const CHAR_PX = 6.7;

const CATEGORY_COLOURS: Readonly<Record<FrameCategory, readonly [number, number]>> = Object.freeze({
  // Hue and saturation; the lightness varies a little by function name so that neighbours differ.
  ours: [28, 90],
  dependency: [205, 65],
  node: [140, 45],
  native: [265, 40],
  v8: [0, 0],
});

const CATEGORY_WORDS: Readonly<Record<FrameCategory, string>> = Object.freeze({
  ours: 'our code',
  dependency: 'dependencies (node_modules)',
  node: "Node's own JavaScript (node:)",
  native: 'native code (C++ bindings, V8 builtins)',
  v8: 'V8 itself ((program), (garbage collector))',
});

export interface FlameGraphOptions {
  /** Frames narrower than this share of the busy time are not drawn. Default {@link DEFAULT_MIN_SHARE}. */
  minShare?: number;
}

/** One drawn box: its place as shares of the width, and its row. */
export interface FlameBox {
  frame: FlameFrame;
  x: number;
  w: number;
  depth: number;
}

/** The boxes of `root`'s tree, depth first: each child placed after its earlier siblings, inside its parent. */
export function layoutFlame(root: FlameFrame, minShare = DEFAULT_MIN_SHARE): FlameBox[] {
  const total = root.totalUs;
  if (total <= 0) return [{ frame: root, x: 0, w: 1, depth: 0 }];
  const boxes: FlameBox[] = [];
  const stack: FlameBox[] = [{ frame: root, x: 0, w: 1, depth: 0 }];
  while (stack.length > 0) {
    const box = stack.pop()!;
    boxes.push(box);
    let x = box.x;
    const kids: FlameBox[] = [];
    for (const c of box.frame.children) {
      const w = c.totalUs / total;
      if (w >= minShare) kids.push({ frame: c, x, w, depth: box.depth + 1 });
      x += w;
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
  }
  return boxes;
}

/** `label` cut to fit `px` of box (with an ellipsis), or empty when not even 3 characters fit. */
export function fitLabel(label: string, px: number): string {
  const chars = Math.floor((px - 6) / CHAR_PX);
  if (chars < 3) return '';
  return label.length <= chars ? label : `${label.slice(0, chars - 1)}…`;
}

function ms(us: number): string {
  return (us / 1000).toFixed(us >= 100_000 ? 0 : 1);
}

function pct(part: number, whole: number): string {
  return whole > 0 ? `${((part / whole) * 100).toFixed(1)} %` : '-';
}

/** `file.ts:12` of a frame, or its package when it has no script. */
export function whereOf(f: { url: string; line: number; pkg: string; category: FrameCategory }): string {
  if (f.url === '') return f.category === 'v8' ? 'V8' : 'native';
  if (f.category === 'node') return f.line > 0 ? `${f.url}:${f.line}` : f.url;
  const file = f.url.replace(/^file:\/\//, '').split('/').pop() ?? f.url;
  return f.line > 0 ? `${file}:${f.line}` : file;
}

function colour(f: FlameFrame): string {
  const [h, s] = CATEGORY_COLOURS[f.category];
  let hash = 0;
  for (let i = 0; i < f.name.length; i++) hash = (hash * 31 + f.name.charCodeAt(i)) | 0;
  const l = f.category === 'v8' ? 78 : 58 + (Math.abs(hash) % 18);
  return `hsl(${h} ${s}% ${l}%)`;
}

/** The flame graph as an `<svg>` (with the `data-*` its zoom script reads). */
export function flameSvg(tree: ProfileTree, opts: FlameGraphOptions = {}): string {
  const boxes = layoutFlame(tree.root, opts.minShare ?? DEFAULT_MIN_SHARE);
  const depth = boxes.reduce((d, b) => Math.max(d, b.depth), 0) + 1;
  const height = depth * FLAME_ROW;
  const busy = tree.busyUs;
  let out = `<svg class="flame" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${FLAME_WIDTH} ${height}" width="100%" role="img" aria-label="Flame graph">`;
  for (const b of boxes) {
    const f = b.frame;
    const label = f === tree.root ? `all busy time: ${ms(busy)} ms` : `${f.name} (${f.category === 'dependency' ? f.pkg : whereOf(f)})`;
    const tip = f === tree.root ? `${label} (click to zoom out)` : `${f.name} — ${whereOf(f)}${f.category === 'dependency' || f.category === 'ours' ? ` (${f.pkg})` : ''}\ntotal ${ms(f.totalUs)} ms (${pct(f.totalUs, busy)} of busy), self ${ms(f.selfUs)} ms (${pct(f.selfUs, busy)})`;
    const x = b.x * FLAME_WIDTH;
    const w = b.w * FLAME_WIDTH;
    const y = b.depth * FLAME_ROW;
    out +=
      `<g class="f" data-x="${b.x.toFixed(6)}" data-w="${b.w.toFixed(6)}" data-d="${b.depth}" data-l="${escapeHtml(label)}">` +
      `<title>${escapeHtml(tip)}</title>` +
      `<rect x="${x.toFixed(2)}" y="${y}" width="${Math.max(w - 0.5, 0.3).toFixed(2)}" height="${FLAME_ROW - 1}" rx="2" fill="${colour(f)}"/>` +
      `<text x="${(x + 3).toFixed(2)}" y="${y + 12}">${escapeHtml(fitLabel(label, w))}</text></g>`;
  }
  return `${out}</svg>`;
}

/**
 * Zooms on a click: a box and what it calls fill the width, the boxes that lead to it span the
 * whole width above it, the rest is hidden; the root (depth 0) zooms back out. The same
 * label fitting as {@link fitLabel}. Inline in the page: it must not contain `</script`.
 */
export const FLAME_ZOOM_SCRIPT = `(function () {
  var W = ${FLAME_WIDTH}, CHAR = ${CHAR_PX}, EPS = 1e-6;
  function fit(label, px) {
    var chars = Math.floor((px - 6) / CHAR);
    if (chars < 3) return '';
    return label.length <= chars ? label : label.slice(0, chars - 1) + '\\u2026';
  }
  function zoom(svg, x, w, d) {
    svg.querySelectorAll('g.f').forEach(function (g) {
      var fx = Number(g.getAttribute('data-x')), fw = Number(g.getAttribute('data-w')), fd = Number(g.getAttribute('data-d'));
      var nx, nw;
      if (fd < d) {
        if (fx > x + EPS || fx + fw < x + w - EPS) { g.style.display = 'none'; return; }
        nx = 0; nw = W;
      } else {
        if (fx + EPS < x || fx + fw > x + w + EPS) { g.style.display = 'none'; return; }
        nx = (fx - x) / w * W; nw = fw / w * W;
      }
      g.style.display = '';
      var rect = g.querySelector('rect'), text = g.querySelector('text');
      rect.setAttribute('x', nx.toFixed(2));
      rect.setAttribute('width', Math.max(nw - 0.5, 0.3).toFixed(2));
      text.setAttribute('x', (nx + 3).toFixed(2));
      text.textContent = fit(g.getAttribute('data-l'), nw);
    });
  }
  document.querySelectorAll('svg.flame').forEach(function (svg) {
    svg.addEventListener('click', function (e) {
      var g = e.target.closest('g.f');
      if (!g) return;
      zoom(svg, Number(g.getAttribute('data-x')), Number(g.getAttribute('data-w')), Number(g.getAttribute('data-d')));
    });
  });
})();`;

const FLAME_STYLE = `svg.flame{font:11px ui-monospace,Menlo,Consolas,monospace;cursor:pointer;user-select:none}svg.flame text{pointer-events:none;fill:#111}svg.flame rect:hover{stroke:#000;stroke-width:0.7}.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin:0 4px 0 12px;vertical-align:middle}`;

/** Where the profile came from, for the page's heading and first lines. */
export interface FlameSource {
  /** e.g. "gateway, event loop (thread 0)". */
  title: string;
  /** The profile file. */
  file: string;
  /** What the window is, in words (e.g. "the steady state, 30.0 s"). */
  window: string;
}

/** The whole page: what was read, the flame graph, then the self-time tables. */
export function renderFlameGraphPage(tree: ProfileTree, source: FlameSource, opts: FlameGraphOptions = {}): string {
  const busy = tree.busyUs;
  const wall = tree.toUs - tree.fromUs;
  const legend = (Object.keys(CATEGORY_WORDS) as FrameCategory[])
    .map((c) => `<span class="swatch" style="background:hsl(${CATEGORY_COLOURS[c][0]} ${CATEGORY_COLOURS[c][1]}% ${c === 'v8' ? 78 : 65}%)"></span>${escapeHtml(CATEGORY_WORDS[c])}`)
    .join('');
  const minShare = opts.minShare ?? DEFAULT_MIN_SHARE;
  const summary =
    `<p>${escapeHtml(source.file)}<br>Window: ${escapeHtml(source.window)}: ${ms(wall)} ms of wall time, ${tree.samples} samples. ` +
    `Busy ${ms(busy)} ms (${pct(busy, wall)} of the window), idle ${ms(tree.idleUs)} ms (waiting for work: left out of the graph).</p>` +
    `<p class="muted">Each sample counts as the time until the next one. On a busy machine V8 samples a thread when it next gets a core, so time it spent waiting for a core lands on whatever ran next; see README › Benchmarks on reading <code>--cpu-prof</code> with care.</p>`;
  const graph =
    `<p class="muted">The root is at the top, what each function called below it; a box's width is its share of the busy time (boxes under ${Number((minShare * 100).toFixed(3))} % are not drawn). ` +
    `Hover for the figures; click a box to zoom to it, the top box to zoom out.</p><p>${legend}</p>${flameSvg(tree, opts)}`;
  const fnRows = tree.functions
    .slice(0, 40)
    .map((f) => [f.name, whereOf(f), f.pkg, ms(f.selfUs), pct(f.selfUs, busy), ms(f.totalUs), pct(f.totalUs, busy)]);
  const pkgRows = tree.packages.map((p) => [p.pkg, CATEGORY_WORDS[p.category], ms(p.selfUs), pct(p.selfUs, busy)]);
  return htmlPage(
    `CPU profile: ${source.title}`,
    [
      { heading: 'What was read', html: summary },
      { heading: 'Flame graph', html: graph },
      { heading: 'Functions by self time (the 40 largest)', html: `<p class="muted">Self: samples in the function itself. Total: samples with it anywhere on the stack, once per sample however deep it recurses.</p>${htmlTable(['function', 'where', 'package', 'self ms', 'self', 'total ms', 'total'], fnRows)}` },
      { heading: 'Self time by package', html: htmlTable(['package', 'kind', 'self ms', 'self'], pkgRows) },
    ],
    { style: FLAME_STYLE, script: FLAME_ZOOM_SCRIPT },
  );
}

/** The largest self-time functions as terminal lines ("  12.3 %  writeBuffer (native)"). */
export function topFunctionsText(tree: ProfileTree, count = 10): string[] {
  return tree.functions.slice(0, count).map((f) => `${pct(f.selfUs, tree.busyUs).padStart(8)}  ${f.name} (${f.category === 'ours' || f.category === 'dependency' ? `${f.pkg}, ` : ''}${whereOf(f)})`);
}
