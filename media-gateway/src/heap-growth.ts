/**
 * How far V8 lets the old generation grow past what a full GC left alive before it starts the
 * next one (#5). Every full GC (Mark-Compact) stops the event loop that paces every call's
 * frames for a few ms; with V8's own heuristic the gateway's loop ran one every ~1.3 s at 200
 * calls (limit ≈ 1.65 × live), marking again almost as soon as one ended. A fixed growth of
 * 200 % (limit = 3 × live) made them a fifth as many and took the frames' jitter p99 and the
 * loop's delay down (README, Benchmarks), for some 40 MB more heap at 200 calls.
 *
 * It is one flag for the whole process (every isolate: the event loop, the pipeline threads and
 * anything else the process runs), read by V8 each time it sets the next limit, so setting it at
 * start-up takes effect from the next full GC.
 */
import { setFlagsFromString } from 'node:v8';

/** `GATEWAY_HEAP_GROWING_PERCENT` when unset. */
export const DEFAULT_HEAP_GROWING_PERCENT = 200;
/** Largest accepted: 11 × live is already more than any gateway needs. */
export const MAX_HEAP_GROWING_PERCENT = 1000;

/** What {@link applyHeapGrowingPercent} did. */
export type HeapGrowth =
  /** The process now runs with this growth. */
  | { kind: 'set'; percent: number }
  /** Node was started with `--heap-growing-percent` (command line or `NODE_OPTIONS`): that one stands. */
  | { kind: 'node-flag'; flag: string }
  /** 0 was asked for: V8's own heuristic, untouched. */
  | { kind: 'v8-default' };

/** Node's own flags, where an explicit `--heap-growing-percent` would be. */
export interface NodeFlagSources {
  execArgv: readonly string[];
  nodeOptions: string | undefined;
}

/** V8 takes `-` and `_` alike inside a flag's name. */
const FLAG = /--heap[-_]growing[-_]percent(?:=\S*)?/;

/** The `--heap-growing-percent` Node was started with, if any. */
export function explicitHeapGrowingFlag(sources: NodeFlagSources): string | undefined {
  for (const arg of [...sources.execArgv, ...(sources.nodeOptions ?? '').split(/\s+/)]) {
    const m = FLAG.exec(arg);
    if (m) return m[0];
  }
  return undefined;
}

/**
 * Sets V8's heap growth for this process to `percent` (1 + percent/100 times what the last full
 * GC left), unless Node was started with its own `--heap-growing-percent` (`nodeFlag`, from
 * {@link explicitHeapGrowingFlag}) or `percent` is 0.
 */
export function applyHeapGrowingPercent(percent: number, nodeFlag: string | undefined): HeapGrowth {
  if (!Number.isInteger(percent) || percent < 0 || percent > MAX_HEAP_GROWING_PERCENT) throw new RangeError(`heap growing percent must be an integer from 0 to ${MAX_HEAP_GROWING_PERCENT} (got ${percent})`);
  if (nodeFlag !== undefined) return { kind: 'node-flag', flag: nodeFlag };
  if (percent === 0) return { kind: 'v8-default' };
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return { kind: 'set', percent };
}
