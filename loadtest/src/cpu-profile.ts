/**
 * Optional CPU profiles of the process under test while a run is measured
 * (`pnpm bench:api -- --cpu-prof <dir>`): the control plane and the bare baseline both run in
 * the bench process, so `node --cpu-prof` would mix their runs into one profile; the inspector
 * is started and stopped around each run instead (warm-up included). Each run writes
 * `<dir>/<scenario>-<platform|bare>.cpuprofile` (Chrome format: DevTools, speedscope) and its
 * flame graph page, `<dir>/<scenario>-<platform|bare>.flame.html` (profile/flame-graph.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { buildProfileTree, type CpuProfile } from './profile/cpu-profile-tree.js';
import { renderFlameGraphPage } from './profile/flame-graph.js';

/** Runs `fn`; with `dir` set, under the CPU profiler, written as `<dir>/<name>.cpuprofile`. */
export async function withCpuProfile<T>(dir: string | undefined, name: string, fn: () => Promise<T>): Promise<T> {
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    // 1 ms sampling (V8's default is 1 ms too; stated so the files are comparable).
    await session.post('Profiler.setSamplingInterval', { interval: 1000 });
    await session.post('Profiler.start');
    const result = await fn();
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${name}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    // And its flame graph beside it: the whole profile, warm-up included. A page that cannot be made must not cost the run its figures.
    try {
      const tree = buildProfileTree(profile as CpuProfile);
      writeFileSync(path.join(dir, `${name}.flame.html`), renderFlameGraphPage(tree, { title: `control plane bench, ${name}`, file, window: 'the whole measured run, warm-up included' }));
    } catch (err) {
      process.stderr.write(`no flame graph for ${file}: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    return result;
  } finally {
    session.disconnect();
  }
}
