/** `pnpm flame` (see flame-file.ts). */
import { invocationDir } from '../config.js';
import { FLAME_USAGE, parseFlameArgs, writeFlameGraph } from './flame-file.js';

function main(): void {
  const parsed = parseFlameArgs(process.argv.slice(2), invocationDir());
  if ('problems' in parsed) {
    for (const p of parsed.problems) process.stderr.write(`${p}\n`);
    process.stderr.write(`${FLAME_USAGE}\n`);
    process.exit(2);
  }
  try {
    for (const line of writeFlameGraph(parsed.options)) process.stdout.write(`${line}\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

main();
