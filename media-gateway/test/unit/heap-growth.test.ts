import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/config.js';
import { applyHeapGrowingPercent, explicitHeapGrowingFlag } from '../../src/heap-growth.js';
import type { HeapGrowth } from '../../src/heap-growth.js';

const execFileAsync = promisify(execFile);
const fixture = fileURLToPath(new URL('../fixtures/heap-growth-gcs.ts', import.meta.url));

/** Runs the churning fixture with the gateway's setting `percent` (and Node flags before it). */
async function churn(percent: number, nodeFlags: string[] = []): Promise<{ growth: HeapGrowth; fullGcs: number }> {
  const { stdout } = await execFileAsync(process.execPath, [...nodeFlags, '--import', 'tsx', fixture, String(percent)], { cwd: dirname(fixture), timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } });
  return JSON.parse(stdout) as { growth: HeapGrowth; fullGcs: number };
}

describe('gateway heap growth configuration', () => {
  it('is 200 % by default, V8\'s own with 0, up to 1000', () => {
    expect(loadGatewayConfig({}).heapGrowingPercent).toBe(200);
    expect(loadGatewayConfig({ GATEWAY_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(loadGatewayConfig({ GATEWAY_HEAP_GROWING_PERCENT: '1000' }).heapGrowingPercent).toBe(1000);
  });

  it('notes a --heap-growing-percent in NODE_OPTIONS, which the gateway leaves standing', () => {
    expect(loadGatewayConfig({ NODE_OPTIONS: '--heap-growing-percent=0' }).heapGrowingNodeFlag).toBe('--heap-growing-percent=0');
    expect(loadGatewayConfig({ NODE_OPTIONS: '--max-old-space-size=512' }).heapGrowingNodeFlag).toBeUndefined();
  });

  it('refuses a value that is not a whole number from 0 to 1000, naming the variable', () => {
    for (const bad of ['-1', '1001', '2.5', 'lots']) expect(() => loadGatewayConfig({ GATEWAY_HEAP_GROWING_PERCENT: bad })).toThrow(/- GATEWAY_HEAP_GROWING_PERCENT:/);
  });
});

describe('applyHeapGrowingPercent', () => {
  it('finds a --heap-growing-percent Node was given, in its arguments or NODE_OPTIONS, with - or _', () => {
    expect(explicitHeapGrowingFlag({ execArgv: ['--import', 'tsx'], nodeOptions: undefined })).toBeUndefined();
    expect(explicitHeapGrowingFlag({ execArgv: ['--heap-growing-percent=50'], nodeOptions: undefined })).toBe('--heap-growing-percent=50');
    expect(explicitHeapGrowingFlag({ execArgv: [], nodeOptions: '--max-old-space-size=512 --heap_growing_percent=0' })).toBe('--heap_growing_percent=0');
    expect(explicitHeapGrowingFlag({ execArgv: ['--max-semi-space-size=8'], nodeOptions: '--trace-gc' })).toBeUndefined();
  });

  it('leaves an explicit Node flag and 0 alone, and refuses a value out of range', () => {
    expect(applyHeapGrowingPercent(200, '--heap-growing-percent=50')).toEqual({ kind: 'node-flag', flag: '--heap-growing-percent=50' });
    expect(applyHeapGrowingPercent(0, undefined)).toEqual({ kind: 'v8-default' });
    for (const bad of [-1, 1.5, 1001]) expect(() => applyHeapGrowingPercent(bad, undefined)).toThrow(RangeError);
  });

  // V8 reads the flag each time it sets the next limit, so setting it after start-up counts: a
  // process whose old generation fills with promoted garbage runs several times fewer full GCs
  // with 400 % than with 25 %. A Node flag given on the command line wins over the setting.
  it('changes how often V8 runs full GCs in a real process, and an explicit Node flag wins', async () => {
    const [tight, loose, flagged] = await Promise.all([churn(25), churn(400), churn(400, ['--heap-growing-percent=25'])]);
    expect(tight.growth).toEqual({ kind: 'set', percent: 25 });
    expect(loose.growth).toEqual({ kind: 'set', percent: 400 });
    expect(flagged.growth).toEqual({ kind: 'node-flag', flag: '--heap-growing-percent=25' });
    expect(loose.fullGcs).toBeGreaterThan(0);
    expect(tight.fullGcs).toBeGreaterThanOrEqual(2 * loose.fullGcs);
    expect(flagged.fullGcs).toBeGreaterThanOrEqual(2 * loose.fullGcs);
  }, 60_000);
});
