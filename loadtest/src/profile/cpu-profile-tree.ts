/**
 * A V8 CPU profile (`node --cpu-prof`, the inspector's `Profiler.stop`) read into a call tree
 * of busy time, for the flame graph and the self-time tables (#5: "profile (`--cpu-prof`,
 * flame graph)").
 *
 * Each sample stands for the time until the next one (as Chrome DevTools counts it), not one
 * sampling interval: on a busy machine V8's sampler takes a sample when the thread next gets
 * a core, so intervals vary. `(idle)` (the thread waiting for work) is counted apart and left
 * out of the tree; `(program)` and `(garbage collector)` are work and stay in it.
 *
 * Timestamps are µs of the system's monotonic clock (`CLOCK_MONOTONIC` on Linux, the clock of
 * `process.hrtime`), the same in every process of the machine, so a window can be given in
 * another process's terms ({@link monotonicUsAtEpochMs}).
 */

import { epochNow } from '../calls/process-sampler.js';
import { isTypeScriptUrl, SourceLines } from './source-lines.js';

export interface CpuProfileCallFrame {
  functionName: string;
  url: string;
  /** 0-based, -1 when unknown. */
  lineNumber: number;
  columnNumber: number;
}

export interface CpuProfileNode {
  id: number;
  callFrame: CpuProfileCallFrame;
  children?: number[];
}

/** The Chrome format, as V8 writes it. */
export interface CpuProfile {
  nodes: CpuProfileNode[];
  /** µs, monotonic clock. */
  startTime: number;
  endTime: number;
  /** Node id of each sample. */
  samples: number[];
  /** µs from the previous sample (the first: from `startTime`). */
  timeDeltas: number[];
}

/** Where a frame's code comes from: the colour of its box and the rows of the by-package table. */
export type FrameCategory = 'ours' | 'dependency' | 'node' | 'native' | 'v8';

/** A function (a box of the flame graph, a row of the functions table) and its time. */
export interface CodeTime {
  name: string;
  /** Script URL without its query (tsx adds `?tsx-namespace=…`); empty for native code and V8's own entries. */
  url: string;
  /**
   * 1-based, 0 when unknown. JavaScript: V8's (0 for line 1, which a bundled one-line file gives
   * every function). TypeScript, which tsx compiles into one or two long lines: the one line of the source
   * that defines the function's name ({@link SourceLines}), 0 when there is not exactly one.
   */
  line: number;
  category: FrameCategory;
  /** Workspace package or npm package the code is in, `node:` for Node's own, else the category. */
  pkg: string;
  selfUs: number;
  /** A box: its self time and its children's. A function: time with it anywhere on the stack, counted once per sample however deep it recurses. */
  totalUs: number;
}

export interface FlameFrame extends CodeTime {
  /** Largest first. */
  children: FlameFrame[];
}

export interface ProfileTree {
  /** `(all busy time)`, whose children are the thread's top frames. */
  root: FlameFrame;
  busyUs: number;
  idleUs: number;
  /** µs of the window read, monotonic clock. */
  fromUs: number;
  toUs: number;
  samples: number;
  /** Self and total time per function, most self time first. */
  functions: CodeTime[];
  /** Self time per package (the `pkg` of each frame), most first. */
  packages: { pkg: string; category: FrameCategory; selfUs: number }[];
}

/** A profile from its JSON text; an error naming `source` and what is wrong when it is not one. */
export function parseCpuProfile(text: string, source: string): CpuProfile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source}: not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  const problem = profileProblem(value);
  if (problem) throw new Error(`${source}: not a V8 CPU profile: ${problem}`);
  return value as CpuProfile;
}

function profileProblem(v: unknown): string | null {
  if (typeof v !== 'object' || v === null) return 'expected an object with nodes, startTime, endTime, samples and timeDeltas';
  const p = v as Record<string, unknown>;
  if (!Array.isArray(p['nodes']) || p['nodes'].length === 0) return '"nodes" must be a non-empty array';
  for (const key of ['startTime', 'endTime'] as const) if (typeof p[key] !== 'number' || !Number.isFinite(p[key])) return `"${key}" must be a number`;
  if (!Array.isArray(p['samples'])) return '"samples" must be an array';
  if (!Array.isArray(p['timeDeltas']) || p['timeDeltas'].length !== p['samples'].length) return '"timeDeltas" must be an array as long as "samples"';
  const ids = new Set<number>();
  for (const [i, n] of (p['nodes'] as unknown[]).entries()) {
    const node = n as Partial<CpuProfileNode> | null;
    if (typeof node?.id !== 'number' || typeof node.callFrame?.functionName !== 'string' || typeof node.callFrame.url !== 'string') return `nodes[${i}] needs an id and a callFrame with functionName and url`;
    if (node.children !== undefined && !Array.isArray(node.children)) return `nodes[${i}].children must be an array`;
    ids.add(node.id);
  }
  const unknown = (p['samples'] as unknown[]).findIndex((id) => !ids.has(id as number));
  if (unknown >= 0) return `samples[${unknown}] names no node`;
  return null;
}

/** `url` without its query and fragment. */
function scriptUrl(url: string): string {
  const cut = url.search(/[?#]/);
  return cut < 0 ? url : url.slice(0, cut);
}

/** A call frame's function, with no time yet. */
function codeOf(f: CpuProfileCallFrame, sources: SourceLines | null): CodeTime {
  const url = scriptUrl(f.url);
  const line = isTypeScriptUrl(url) ? (sources?.line(url, f.functionName) ?? 0) : f.lineNumber > 0 ? f.lineNumber + 1 : 0;
  return { name: f.functionName || '(anonymous)', url, line, ...classifyCode(f.url, f.functionName), selfUs: 0, totalUs: 0 };
}

/** The category and package of code at `url` (a `file://` URL or path, `node:…`, or empty). */
export function classifyCode(rawUrl: string, functionName: string): { category: FrameCategory; pkg: string } {
  const url = scriptUrl(rawUrl);
  if (url === '') return functionName.startsWith('(') ? { category: 'v8', pkg: 'V8' } : { category: 'native', pkg: 'native' };
  if (url.startsWith('node:')) return { category: 'node', pkg: 'node:' };
  if (url.startsWith('wasm://')) return { category: 'native', pkg: 'wasm' };
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = path.slice(nm + '/node_modules/'.length).split('/');
    const name = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? '');
    return { category: 'dependency', pkg: name };
  }
  // Our code: the workspace package is the directory above src/ (or test/, bin/, a build's dist/).
  const parts = path.split('/');
  const at = parts.findLastIndex((s) => s === 'src' || s === 'test' || s === 'bin' || s === 'dist');
  return { category: 'ours', pkg: at > 0 ? parts[at - 1]! : (parts.at(-2) ?? path) };
}

/**
 * Monotonic µs (the profile's clock) of epoch ms `epochMs`, from one reading of both clocks
 * ({@link clockReading}). For a window given as wall-clock times (the bench's ramp end and steady end).
 */
export function monotonicUsAtEpochMs(epochMs: number, reading: { monotonicUs: number; epochMs: number }): number {
  return reading.monotonicUs + (epochMs - reading.epochMs) * 1000;
}

/** Both clocks, read at once: the monotonic one in µs, the wall clock in epoch ms. */
export function clockReading(): { monotonicUs: number; epochMs: number } {
  const monotonicUs = Number(process.hrtime.bigint() / 1000n);
  return { monotonicUs, epochMs: epochNow() };
}

/**
 * The busy call tree of `profile` between `fromUs` and `toUs` (monotonic µs; default its
 * whole span). Sibling nodes of the same function are merged (V8 keeps a node per calling line).
 * `sources` finds TypeScript functions' lines (null: none are read, as for a profile of another machine).
 */
export function buildProfileTree(profile: CpuProfile, window: { fromUs?: number; toUs?: number } = {}, sources: SourceLines | null = new SourceLines()): ProfileTree {
  const fromUs = Math.max(window.fromUs ?? profile.startTime, profile.startTime);
  const toUs = Math.min(window.toUs ?? profile.endTime, profile.endTime);
  const byId = new Map<number, CpuProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) byId.set(n.id, n);
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Self time per node: each sample lasts until the next one, clipped to the window.
  const selfById = new Map<number, number>();
  let t = profile.startTime;
  let samples = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    const next = i + 1 < profile.samples.length ? t + profile.timeDeltas[i + 1]! : profile.endTime;
    const us = Math.min(next, toUs) - Math.max(t, fromUs);
    if (us <= 0) continue;
    samples++;
    const id = profile.samples[i]!;
    selfById.set(id, (selfById.get(id) ?? 0) + us);
  }

  const rootNode = profile.nodes.find((n) => !parent.has(n.id))!;
  const root: FlameFrame = { name: '(all busy time)', url: '', line: 0, category: 'v8', pkg: 'V8', selfUs: 0, totalUs: 0, children: [] };
  let idleUs = 0;
  const fnTimes = new Map<string, CodeTime>();
  const keyOf = (f: CpuProfileCallFrame) => `${f.functionName}\u0000${f.url}\u0000${f.lineNumber}\u0000${f.columnNumber}`;

  // Merge into the frame tree, iteratively (stacks can be deep): the root's own self time is V8's too.
  const stack: { node: CpuProfileNode; into: FlameFrame }[] = [];
  for (const c of rootNode.children ?? []) stack.push({ node: byId.get(c)!, into: root });
  root.selfUs += selfById.get(rootNode.id) ?? 0;
  const childIndex = new Map<FlameFrame, Map<string, FlameFrame>>();
  while (stack.length > 0) {
    const { node, into } = stack.pop()!;
    const f = node.callFrame;
    if (into === root && f.functionName === '(idle)') {
      idleUs += subtreeSelf(node, byId, selfById);
      continue;
    }
    let index = childIndex.get(into);
    if (!index) childIndex.set(into, (index = new Map()));
    const key = keyOf(f);
    let frame = index.get(key);
    if (!frame) {
      frame = { ...codeOf(f, sources), children: [] };
      index.set(key, frame);
      into.children.push(frame);
    }
    frame.selfUs += selfById.get(node.id) ?? 0;
    for (const c of node.children ?? []) stack.push({ node: byId.get(c)!, into: frame });
  }
  sumTotals(root);
  prune(root);

  // Per function: self time, and total time counted once per stack (recursion is not counted twice).
  for (const [id, us] of selfById) {
    const seen = new Set<string>();
    let first = true;
    for (let n: CpuProfileNode | undefined = byId.get(id); n && parent.has(n.id); n = byId.get(parent.get(n.id)!)) {
      const f = n.callFrame;
      if (f.functionName === '(idle)') break;
      const fk = keyOf(f);
      let ft = fnTimes.get(fk);
      if (!ft) fnTimes.set(fk, (ft = codeOf(f, sources)));
      if (first) ft.selfUs += us;
      first = false;
      if (!seen.has(fk)) ft.totalUs += us;
      seen.add(fk);
    }
  }
  const functions = [...fnTimes.values()].filter((f) => f.totalUs > 0).sort((a, b) => b.selfUs - a.selfUs || b.totalUs - a.totalUs);
  const pkgs = new Map<string, { pkg: string; category: FrameCategory; selfUs: number }>();
  for (const f of functions) {
    const p = pkgs.get(f.pkg) ?? { pkg: f.pkg, category: f.category, selfUs: 0 };
    p.selfUs += f.selfUs;
    pkgs.set(f.pkg, p);
  }
  const packages = [...pkgs.values()].filter((p) => p.selfUs > 0).sort((a, b) => b.selfUs - a.selfUs || a.pkg.localeCompare(b.pkg));
  return { root, busyUs: root.totalUs, idleUs, fromUs, toUs: Math.max(fromUs, toUs), samples, functions, packages };
}

function subtreeSelf(node: CpuProfileNode, byId: Map<number, CpuProfileNode>, selfById: Map<number, number>): number {
  let us = 0;
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    us += selfById.get(n.id) ?? 0;
    for (const c of n.children ?? []) stack.push(byId.get(c)!);
  }
  return us;
}

/** Sets every frame's total (self plus its children's), bottom up. */
function sumTotals(root: FlameFrame): void {
  const order: FlameFrame[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const f = stack.pop()!;
    order.push(f);
    stack.push(...f.children);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const f = order[i]!;
    f.totalUs = f.selfUs + f.children.reduce((s, c) => s + c.totalUs, 0);
  }
}

/** Drops frames with no time in the window and sorts each frame's children, largest first. */
function prune(root: FlameFrame): void {
  const stack = [root];
  while (stack.length > 0) {
    const f = stack.pop()!;
    f.children = f.children.filter((c) => c.totalUs > 0).sort((a, b) => b.totalUs - a.totalUs);
    stack.push(...f.children);
  }
}
