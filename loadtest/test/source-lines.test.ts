import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProfileTree, parseCpuProfile } from '../src/profile/cpu-profile-tree.js';
import { SourceLines, definitionLinesOf } from '../src/profile/source-lines.js';

/** Lines (1-based) of `source` that define `name`. */
const definitionLines = (source: string, name: string): number[] => definitionLinesOf(source).get(name) ?? [];

const SOURCE = `import { x } from './x.js';

export function spin(ms: number): number {
  return ms;
}

export class Sink {
  private readonly queue: number[] = [];

  send(frame: Buffer, offset = 0): void {
    this.queue.push(offset);
  }

  async *frames<T>(): AsyncGenerator<T> {}

  get size(): number {
    return this.queue.length;
  }

  private flush = (): void => {};
}

class Other {
  send(): void {
    spin(1);
  }
}

const handler = async (req: unknown) => req;
export const hold = function (n: number) {
  return n;
};
const table = { open: (n: number) => n, close(n: number) { return n; } };
// Calls are not definitions:
spin(3);
new Other().send();
`;

describe('definitionLines', () => {
  it('finds functions, methods, generators, getters, and arrows or functions bound to a name, by the name V8 gives them', () => {
    expect(definitionLines(SOURCE, 'spin')).toEqual([3]);
    expect(definitionLines(SOURCE, 'frames')).toEqual([14]);
    // V8 names a getter "get size".
    expect(definitionLines(SOURCE, 'get size')).toEqual([16]);
    expect(definitionLines(SOURCE, 'size')).toEqual([]);
    expect(definitionLines(SOURCE, 'flush')).toEqual([20]);
    expect(definitionLines(SOURCE, 'handler')).toEqual([29]);
    expect(definitionLines(SOURCE, 'hold')).toEqual([30]);
    // Two classes define send: both lines, so no one line is claimed.
    expect(definitionLines(SOURCE, 'send')).toEqual([10, 24]);
    expect(definitionLines(SOURCE, 'queue')).toEqual([]);
    // An object literal's function-valued keys and methods.
    expect([definitionLines(SOURCE, 'open'), definitionLines(SOURCE, 'close')]).toEqual([[33], [33]]);
    expect(definitionLines(SOURCE, '(anonymous)')).toEqual([]);
  });
});

describe('loading TypeScript', () => {
  it('waits for the first TypeScript source to parse: the API bench, which measures its own process, does not carry the compiler', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'source-lines-lazy-'));
    try {
      const probe = join(dir, 'probe.mts');
      const src = (f: string) => pathToFileURL(join(process.cwd(), 'loadtest/src', f)).href;
      writeFileSync(
        probe,
        `import { createRequire } from 'node:module';
import { withCpuProfile } from '${src('cpu-profile.ts')}';
import { SourceLines } from '${src('profile/source-lines.ts')}';
const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/typescript/lib/'));
const before = loaded();
await withCpuProfile(undefined, 'x', async () => 1);
const idle = loaded();
const line = new SourceLines().line(${JSON.stringify(pathToFileURL(probe).href)}, 'loaded');
console.log(JSON.stringify({ before, idle, after: loaded(), line }));
`,
      );
      const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, ['--import', 'tsx', probe], { timeout: 60_000, cwd: process.cwd() }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
      expect(JSON.parse(out)).toEqual({ before: false, idle: false, after: true, line: 4 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SourceLines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'source-lines-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("gives a TypeScript function's one defining line, 0 when a name is defined twice or the file is not there", () => {
    const file = join(dir, 'sink.ts');
    writeFileSync(file, SOURCE);
    const lines = new SourceLines();
    expect(lines.line(`${pathToFileURL(file).href}`, 'spin')).toBe(3);
    expect(lines.line(file, 'get size')).toBe(16);
    expect(lines.line(pathToFileURL(file).href, 'send')).toBe(0);
    expect(lines.line(join(dir, 'gone.ts'), 'spin')).toBe(0);
    expect(lines.line(join(dir, 'sink.js'), 'spin')).toBe(0);
  });

  it('places the functions of a real profile of TypeScript run by tsx, which V8 puts on its compiled lines', async () => {
    const file = join(dir, 'phases.ts');
    writeFileSync(
      file,
      `const until = (ms: number): number => performance.now() + ms;

function firstPhase(ms: number): number {
  const end: number = until(ms);
  let x = 0;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  return x;
}

console.log(firstPhase(200));
`,
    );
    const profDir = join(dir, 'prof');
    await new Promise<void>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', '--cpu-prof', `--cpu-prof-dir=${profDir}`, file], { timeout: 60_000, cwd: process.cwd() }, (err) => (err ? reject(err) : resolve())),
    );
    const name = readdirSync(profDir).find((n) => n.endsWith('.cpuprofile'))!;
    const profile = parseCpuProfile(readFileSync(join(profDir, name), 'utf8'), name);
    const raw = profile.nodes.find((n) => n.callFrame.functionName === 'firstPhase')!.callFrame;
    expect(raw.url).toContain('phases.ts');
    // What the lookup is for: V8's line is the compiled module's (tsx compiles a module onto one or two lines), not the source's.
    expect(raw.lineNumber).toBeLessThan(2);
    const fn = buildProfileTree(profile).functions.find((f) => f.name === 'firstPhase')!;
    expect(fn).toMatchObject({ category: 'ours', line: 3 });
    expect(fn.totalUs).toBeGreaterThan(100_000);
    // Without the sources, no line.
    expect(buildProfileTree(profile, {}, null).functions.find((f) => f.name === 'firstPhase')!.line).toBe(0);
  });
});
