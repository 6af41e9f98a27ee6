import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withCpuProfile } from '../src/cpu-profile.js';
import { buildProfileTree, classifyCode, type CpuProfile, type CpuProfileNode, type FlameFrame, monotonicUsAtEpochMs, parseCpuProfile } from '../src/profile/cpu-profile-tree.js';
import { parseFlameArgs, profilesOfProcess, threadLabel, writeFlameGraph, writeProcessFlameGraphs } from '../src/profile/flame-file.js';
import { FLAME_WIDTH, FLAME_ZOOM_SCRIPT, fitLabel, flameSvg, layoutFlame, renderFlameGraphPage } from '../src/profile/flame-graph.js';
import { markupProblems } from './html-markup.js';

const OURS = 'file:///srv/vap/media-gateway/dist/twilio/pacer.js';
const WS = 'file:///srv/vap/node_modules/.pnpm/ws@8.18.3/node_modules/ws/lib/sender.js';

function node(id: number, functionName: string, url: string, children: number[] = [], lineNumber = 9): CpuProfileNode {
  return { id, callFrame: { functionName, url, lineNumber, columnNumber: 4 }, children };
}

/**
 * root ─┬ (idle)
 *       ├ tick (ours) ─┬ send (ws) ─ writeBuffer (native)
 *       │              ├ send (ws, the same function called from another line: its own V8 node)
 *       │              └ walk ─ walk ─ walk (recursion)
 *       └ (garbage collector)
 */
const NODES: CpuProfileNode[] = [
  node(1, '(root)', '', [2, 3, 8]),
  node(2, '(idle)', ''),
  node(3, 'tick', OURS, [4, 6, 9]),
  node(4, 'send', WS, [5]),
  node(5, 'writeBuffer', ''),
  node(6, 'send', WS),
  node(8, '(garbage collector)', ''),
  node(9, 'walk', OURS, [10], 40),
  node(10, 'walk', OURS, [11], 40),
  node(11, 'walk', OURS, [], 40),
];

/** Samples at 1000 + the running sum of `deltas`; each lasts until the next (the last until endTime). */
function profile(samples: number[], deltas: number[], endTime: number): CpuProfile {
  return { nodes: NODES, startTime: 1000, endTime, samples, timeDeltas: deltas };
}

function find(f: FlameFrame, ...path: string[]): FlameFrame {
  let at = f;
  for (const name of path) {
    const next = at.children.find((c) => c.name === name);
    if (!next) throw new Error(`no ${name} under ${at.name}`);
    at = next;
  }
  return at;
}

describe('buildProfileTree', () => {
  // t: 1000 idle, 1100 writeBuffer, 1400 send(6), 1500 tick, 1600 gc, 1650 walk³, 1850 idle; end 2000.
  const p = profile([2, 5, 6, 3, 8, 11, 2], [0, 100, 300, 100, 100, 50, 200], 2000);

  it('counts each sample as the time until the next one, leaves idle out and merges one function called from two lines', () => {
    const tree = buildProfileTree(p);
    expect(tree.idleUs).toBe(100 + 150);
    expect(tree.busyUs).toBe(300 + 100 + 100 + 50 + 200);
    const tick = find(tree.root, 'tick');
    expect(tick.totalUs).toBe(300 + 100 + 100 + 200);
    expect(tick.selfUs).toBe(100);
    // Nodes 4 and 6 are one box: 300 under writeBuffer, 100 of its own.
    const send = find(tree.root, 'tick', 'send');
    expect(tick.children.filter((c) => c.name === 'send')).toHaveLength(1);
    expect([send.totalUs, send.selfUs]).toEqual([400, 100]);
    expect(find(send, 'writeBuffer')).toMatchObject({ selfUs: 300, category: 'native' });
    expect(find(tree.root, '(garbage collector)')).toMatchObject({ totalUs: 50, category: 'v8' });
    // Largest first.
    expect(tree.root.children.map((c) => c.name)).toEqual(['tick', '(garbage collector)']);
    expect(tree.samples).toBe(7);
  });

  it('counts a recursive function once per sample in its total, and sums self time by package', () => {
    const tree = buildProfileTree(p);
    const walk = tree.functions.find((f) => f.name === 'walk')!;
    expect([walk.selfUs, walk.totalUs]).toEqual([200, 200]);
    expect(find(tree.root, 'tick', 'walk', 'walk', 'walk').selfUs).toBe(200);
    expect(tree.functions[0]).toMatchObject({ name: 'writeBuffer', selfUs: 300, totalUs: 300 });
    expect(tree.functions.find((f) => f.name === 'tick')).toMatchObject({ selfUs: 100, totalUs: 700, pkg: 'media-gateway', line: 10 });
    expect(tree.packages).toEqual([
      { pkg: 'media-gateway', category: 'ours', selfUs: 300 },
      { pkg: 'native', category: 'native', selfUs: 300 },
      { pkg: 'ws', category: 'dependency', selfUs: 100 },
      { pkg: 'V8', category: 'v8', selfUs: 50 },
    ]);
  });

  it('keeps only the window asked for, cutting the samples at its edges', () => {
    // 1300–1620: 100 of writeBuffer's 300, send's 100, tick's 100, 20 of the GC's 50.
    const tree = buildProfileTree(p, { fromUs: 1300, toUs: 1620 });
    expect(tree.busyUs).toBe(320);
    expect(find(tree.root, 'tick', 'send', 'writeBuffer').selfUs).toBe(100);
    expect(find(tree.root, '(garbage collector)').totalUs).toBe(20);
    expect(tree.root.children.some((c) => c.name === 'walk')).toBe(false);
    expect(tree.functions.some((f) => f.name === 'walk')).toBe(false);
    expect([tree.fromUs, tree.toUs, tree.samples]).toEqual([1300, 1620, 4]);
  });
});

describe('classifyCode', () => {
  it('tells our packages, dependencies (scoped, under pnpm), Node, native code, wasm and V8 apart', () => {
    expect(classifyCode(`${OURS}?tsx-namespace=3d43`, 'tick')).toEqual({ category: 'ours', pkg: 'media-gateway' });
    expect(classifyCode(WS, 'send')).toEqual({ category: 'dependency', pkg: 'ws' });
    expect(classifyCode('file:///srv/vap/node_modules/.pnpm/@deepgram+sdk@4.11.2/node_modules/@deepgram/sdk/dist/main/index.js', 'sendMedia')).toEqual({ category: 'dependency', pkg: '@deepgram/sdk' });
    expect(classifyCode('node:internal/streams/writable', 'Writable.write')).toEqual({ category: 'node', pkg: 'node:' });
    expect(classifyCode('', 'writeBuffer')).toEqual({ category: 'native', pkg: 'native' });
    expect(classifyCode('', '(program)')).toEqual({ category: 'v8', pkg: 'V8' });
    expect(classifyCode('wasm://wasm/f757504a', 'parse')).toEqual({ category: 'native', pkg: 'wasm' });
  });
});

describe('parseCpuProfile', () => {
  it('names the file and what is wrong when it is not a profile', () => {
    expect(() => parseCpuProfile('{"nodes":', 'a.cpuprofile')).toThrow(/^a\.cpuprofile: not JSON/);
    expect(() => parseCpuProfile('{"nodes":[]}', 'b.cpuprofile')).toThrow('b.cpuprofile: not a V8 CPU profile: "nodes" must be a non-empty array');
    const good = profile([2], [0], 1100);
    expect(() => parseCpuProfile(JSON.stringify({ ...good, timeDeltas: [] }), 'c')).toThrow('"timeDeltas" must be an array as long as "samples"');
    expect(() => parseCpuProfile(JSON.stringify({ ...good, samples: [77] }), 'd')).toThrow('samples[0] names no node');
    expect(() => parseCpuProfile(JSON.stringify({ ...good, nodes: [{ id: 1 }] }), 'e')).toThrow('nodes[0] needs an id and a callFrame');
    expect(parseCpuProfile(JSON.stringify(good), 'f').samples).toEqual([2]);
  });
});

describe('the flame graph', () => {
  const tree = buildProfileTree(profile([2, 5, 6, 3, 8, 11, 2], [0, 100, 300, 100, 100, 50, 200], 2000));

  it('places each box inside its parent, as wide as its share of the busy time, and leaves out the narrowest', () => {
    const boxes = layoutFlame(tree.root, 0);
    const at = (name: string, depth: number) => boxes.find((b) => b.frame.name === name && b.depth === depth)!;
    expect(at('(all busy time)', 0)).toMatchObject({ x: 0, w: 1 });
    expect(at('tick', 1)).toMatchObject({ x: 0, w: 700 / 750 });
    expect(at('(garbage collector)', 1).x).toBeCloseTo(700 / 750, 9);
    expect(at('send', 2)).toMatchObject({ x: 0, w: 400 / 750 });
    expect(at('walk', 2).x).toBeCloseTo(400 / 750, 9);
    expect(at('walk', 4).w).toBeCloseTo(200 / 750, 9);
    // The garbage collector's 50 of 750 (6.7 %) is under a 10 % floor: not drawn.
    expect(layoutFlame(tree.root, 0.1).some((b) => b.frame.name === '(garbage collector)')).toBe(false);
  });

  it('fits labels to their box', () => {
    expect(fitLabel('writeBuffer (native)', 1000)).toBe('writeBuffer (native)');
    expect(fitLabel('writeBuffer (native)', 60)).toBe('writeBu…');
    expect(fitLabel('writeBuffer (native)', 20)).toBe('');
  });

  it('renders a well-formed page whose names are escaped, with the tables of self time', () => {
    const evil = buildProfileTree({ nodes: [node(1, '(root)', '', [2]), node(2, '<img src=x onerror="alert(1)">', OURS)], startTime: 0, endTime: 100, samples: [2], timeDeltas: [0] });
    const page = renderFlameGraphPage(evil, { title: 'gateway & co', file: '/tmp/a.cpuprofile', window: 'the whole profile' });
    expect(markupProblems(page)).toEqual([]);
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; (pacer.js:10)');
    const full = renderFlameGraphPage(tree, { title: 'gateway, event loop', file: '/tmp/b.cpuprofile', window: 'the steady state' });
    expect(markupProblems(full)).toEqual([]);
    expect(full).toContain('Busy 0.8 ms (75.0 % of the window), idle 0.3 ms');
    expect(full).toContain('(boxes under 0.1 % are not drawn)');
    expect(renderFlameGraphPage(tree, { title: 't', file: 'f', window: 'w' }, { minShare: 0.0005 })).toContain('(boxes under 0.05 % are not drawn)');
    // The functions table: writeBuffer first, its self time 300 of 750 µs.
    expect(full).toMatch(/<tr><td>writeBuffer<\/td><td class="num">native<\/td><td class="num">native<\/td><td class="num">0.3<\/td><td class="num">40.0 %<\/td>/);
  });
});

/** A minimal DOM over the page's flame boxes: enough for the zoom script (querySelectorAll, attributes, a click). */
function fakeDom(svgMarkup: string) {
  type El = { attrs: Map<string, string>; style: { display: string }; textContent: string; getAttribute(n: string): string | null; setAttribute(n: string, v: string): void };
  const el = (attrs: Record<string, string>, text = ''): El => ({
    attrs: new Map(Object.entries(attrs)),
    style: { display: '' },
    textContent: text,
    getAttribute(n) {
      return this.attrs.get(n) ?? null;
    },
    setAttribute(n, v) {
      this.attrs.set(n, v);
    },
  });
  const attrsOf = (s: string) => Object.fromEntries([...s.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
  const boxes = [...svgMarkup.matchAll(/<g class="f" ([^>]*)><title>[^<]*<\/title><rect ([^>]*)\/><text ([^>]*)>([^<]*)<\/text><\/g>/g)].map((m) => {
    const g = el(attrsOf(m[1]!)) as El & { rect: El; text: El; closest(sel: string): unknown; querySelector(sel: string): El };
    g.rect = el(attrsOf(m[2]!));
    g.text = el(attrsOf(m[3]!), m[4]!);
    g.closest = () => g;
    g.querySelector = (sel) => (sel === 'rect' ? g.rect : g.text);
    return g;
  });
  let onClick: ((e: { target: unknown }) => void) | null = null;
  const svg = { querySelectorAll: () => boxes, addEventListener: (_: string, fn: (e: { target: unknown }) => void) => (onClick = fn) };
  const document = { querySelectorAll: (sel: string) => (sel === 'svg.flame' ? [svg] : []) };
  return { boxes, document, click: (g: unknown) => onClick!({ target: { closest: () => g } }) };
}

describe('the flame graph zoom script', () => {
  it('zooms a box to the full width with what it calls, spans its callers, hides the rest, and zooms out from the root', () => {
    const tree = buildProfileTree(profile([2, 5, 6, 3, 8, 11, 2], [0, 100, 300, 100, 100, 50, 200], 2000));
    const dom = fakeDom(flameSvg(tree, { minShare: 0 }));
    runInNewContext(FLAME_ZOOM_SCRIPT, { document: dom.document });
    const box = (label: string) => dom.boxes.find((b) => b.getAttribute('data-l')!.startsWith(label))!;
    const before = dom.boxes.map((b) => [b.rect.getAttribute('x'), b.rect.getAttribute('width'), b.text.textContent]);
    const send = box('send ');
    dom.click(send);
    expect([send.rect.getAttribute('x'), send.rect.getAttribute('width')]).toEqual(['0.00', (FLAME_WIDTH - 0.5).toFixed(2)]);
    expect(send.text.textContent).toBe('send (ws)');
    // writeBuffer had 300 of send's 400.
    expect(Number(box('writeBuffer').rect.getAttribute('width'))).toBeCloseTo(FLAME_WIDTH * 0.75 - 0.5, 1);
    // Its callers span the width; its sibling and the GC are hidden.
    expect(box('tick').rect.getAttribute('width')).toBe((FLAME_WIDTH - 0.5).toFixed(2));
    expect(box('tick').style.display).toBe('');
    expect(box('walk').style.display).toBe('none');
    expect(box('(garbage collector)').style.display).toBe('none');
    dom.click(dom.boxes[0]);
    expect(dom.boxes.map((b) => [b.rect.getAttribute('x'), b.rect.getAttribute('width'), b.text.textContent])).toEqual(before);
    expect(dom.boxes.every((b) => b.style.display === '')).toBe(true);
  });
});

describe('parseFlameArgs', () => {
  it('resolves the paths against the directory the user ran pnpm from', () => {
    expect(parseFlameArgs(['--', 'prof/a.cpuprofile', '--from', '20', '--to', '50.5'], '/home/ana/vap')).toEqual({
      options: { file: '/home/ana/vap/prof/a.cpuprofile', fromSec: 20, toSec: 50.5, minShare: 0.001, out: '/home/ana/vap/prof/a.flame.html' },
    });
    expect(parseFlameArgs(['/p/b.cpuprofile', '--out', 'x.html', '--min-percent', '0.5'], '/w')).toMatchObject({ options: { out: '/w/x.html', minShare: 0.005 } });
  });

  it('names each flag that is wrong', () => {
    expect(parseFlameArgs(['a', 'b', '--from=-1', '--min-percent', '100'], '/w')).toEqual({
      problems: ['expected one profile file, got 2', '--from: must be a number of seconds >= 0 (got "-1")', '--min-percent: must be a number from 0 to under 100 (got "100")'],
    });
    expect(parseFlameArgs(['a', '--from', '9', '--to', '3'], '/w')).toEqual({ problems: ['--to: must be after --from (3 <= 9)'] });
    expect(parseFlameArgs(['a', '--bogus'], '/w')).toMatchObject({ problems: [expect.stringContaining("'--bogus'")] });
  });
});

/**
 * A real `node --cpu-prof` of a script that spins in `firstPhase` for 300 ms, prints both clocks,
 * then spins in `secondPhase` for 150 ms.
 */
describe('a real V8 profile', () => {
  let dir = '';
  let pid = 0;
  let marker: { monotonicUs: number; epochMs: number };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flame-'));
    const script = join(dir, 'phases.mjs');
    writeFileSync(
      script,
      `function spin(ms) { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x; }
function firstPhase() { return spin(300); }
function secondPhase() { return spin(150); }
firstPhase();
console.log(JSON.stringify({ monotonicUs: Number(process.hrtime.bigint() / 1000n), epochMs: performance.timeOrigin + performance.now() }));
secondPhase();
`,
    );
    const out = await new Promise<string>((resolve, reject) => {
      const child = execFile(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, script], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
      pid = child.pid!;
    });
    marker = JSON.parse(out) as typeof marker;
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is found by its process id, and its busy time splits between the two phases as they ran', () => {
    const found = profilesOfProcess(dir, pid);
    expect(found.map((f) => f.thread)).toEqual([0]);
    expect(profilesOfProcess(dir, pid + 1)).toEqual([]);
    const p = parseCpuProfile(readFileSync(found[0]!.file, 'utf8'), found[0]!.file);
    expect(threadLabel(p, 0)).toBe('event loop (main thread)');
    const tree = buildProfileTree(p);
    const total = (name: string) => tree.functions.find((f) => f.name === name)?.totalUs ?? 0;
    expect(total('firstPhase')).toBeGreaterThan(200_000);
    expect(total('firstPhase') / total('secondPhase')).toBeGreaterThan(1.4);
    expect(total('firstPhase') / total('secondPhase')).toBeLessThan(3);
    // On line 1, which is not shown (tsx compiles a module onto one line).
    expect(tree.functions.find((f) => f.name === 'spin')).toMatchObject({ category: 'ours', line: 0 });
    // The profile's clock is the system's monotonic clock, process.hrtime's: from the marker on, only the second phase ran
    // (but for the part of firstPhase's last sample after the marker: a sample lasts until the next one).
    const after = buildProfileTree(p, { fromUs: marker.monotonicUs });
    expect(after.functions.find((f) => f.name === 'firstPhase')?.totalUs ?? 0).toBeLessThan(5000);
    expect(after.functions.find((f) => f.name === 'secondPhase')!.totalUs).toBeGreaterThan(80_000);
    const before = buildProfileTree(p, { toUs: marker.monotonicUs });
    expect(before.functions.some((f) => f.name === 'secondPhase')).toBe(false);
    expect(before.functions.find((f) => f.name === 'firstPhase')!.totalUs).toBeGreaterThan(200_000);
  });

  it('writes a flame graph of a wall-clock window beside the profile (the bench), and of seconds from its start (pnpm flame)', () => {
    // From 20 ms after the marker (clear of firstPhase's last sample) to well after the end.
    const lines = writeProcessFlameGraphs(dir, pid, 'phases', { fromAt: marker.epochMs + 20, toAt: marker.epochMs + 10_000, words: 'after the marker' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^phases, event loop \(main thread\): flame graph of after the marker in .*\.flame\.html \(busy \d+ ms; most self time: /);
    const page = readFileSync(readdirSync(dir).filter((n) => n.endsWith('.flame.html')).map((n) => join(dir, n))[0]!, 'utf8');
    expect(page).toContain('secondPhase (phases.mjs:3)');
    expect(page).not.toContain('firstPhase');
    expect(monotonicUsAtEpochMs(marker.epochMs + 5, marker)).toBe(marker.monotonicUs + 5000);

    const file = profilesOfProcess(dir, pid)[0]!.file;
    const out = join(dir, 'cli.html');
    const printed = writeFlameGraph({ file, fromSec: 0, toSec: null, minShare: 0.001, out });
    expect(printed[0]).toMatch(/^flame graph of .* \(0\.0–\d+\.\d s of \d+\.\d s, busy \d+ ms\) written to .*cli\.html$/);
    expect(printed[1]).toBe('largest self time, % of busy:');
    expect(readFileSync(out, 'utf8')).toContain('firstPhase (phases.mjs:2)');
    expect(() => writeFlameGraph({ file: join(dir, 'phases.mjs'), fromSec: null, toSec: null, minShare: 0.001, out })).toThrow(/phases\.mjs: not JSON/);
    expect(() => writeFlameGraph({ file: join(dir, 'none.cpuprofile'), fromSec: null, toSec: null, minShare: 0.001, out })).toThrow(`${join(dir, 'none.cpuprofile')}: no such file`);
    expect(() => writeFlameGraph({ file: dir, fromSec: null, toSec: null, minShare: 0.001, out })).toThrow(`${dir}: a directory, not a CPU profile (a .cpuprofile file)`);
    // A window past the profile's end is refused, not drawn empty; one running past it is cut at the end.
    expect(() => writeFlameGraph({ file, fromSec: 3600, toSec: null, minShare: 0.001, out })).toThrow(/^--from: 3600 s is at or past the end of .*\.cpuprofile, which spans \d+\.\d s$/);
    expect(writeFlameGraph({ file, fromSec: 0, toSec: 3600, minShare: 0.001, out })[0]).toMatch(/\(0\.0–(\d+\.\d) s of \1 s, busy/);
  });
});

describe('when there is no profile to read', () => {
  it('says so in a line instead of throwing, so the bench still writes its report', () => {
    const gone = join(tmpdir(), `flame-none-${process.pid}`);
    expect(profilesOfProcess(gone, 4242)).toEqual([]);
    expect(writeProcessFlameGraphs(gone, 4242, 'gateway', { fromAt: 0, toAt: 1, words: 'the steady state' })).toEqual([`gateway: no CPU profile of process 4242 in ${gone} (it did not exit by itself), so no flame graph`]);
    expect(() => writeFlameGraph({ file: join(gone, 'a.cpuprofile'), fromSec: null, toSec: null, minShare: 0.001, out: join(gone, 'a.html') })).toThrow(`${join(gone, 'a.cpuprofile')}`);
  });
});

describe('withCpuProfile (bench:api -- --cpu-prof)', () => {
  it('profiles the run in this process and writes the profile and its flame graph', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flame-api-'));
    try {
      const busyLoop = () => {
        const end = performance.now() + 120;
        let x = 0;
        while (performance.now() < end) x += Math.sqrt(x + 3);
        return x;
      };
      const result = await withCpuProfile(dir, 'get-by-id-platform', async () => busyLoop());
      expect(result).toBeGreaterThan(0);
      expect(readdirSync(dir).sort()).toEqual(['get-by-id-platform.cpuprofile', 'get-by-id-platform.flame.html']);
      const page = readFileSync(join(dir, 'get-by-id-platform.flame.html'), 'utf8');
      expect(page).toContain('CPU profile: control plane bench, get-by-id-platform');
      expect(page).toMatch(/busyLoop \(flame-graph\.test\.ts(:\d+)?\)/);
      expect(markupProblems(page)).toEqual([]);
      // Without a directory, nothing is profiled or written.
      expect(await withCpuProfile(undefined, 'x', async () => 7)).toBe(7);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
