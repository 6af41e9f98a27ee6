import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The token kept in `dataDir/<name>`, created on first use (mode 0600) as `bytes` random
 * bytes in hex. One-machine mode only: replicas on several machines would each make
 * their own, which is why production deployments set the value in the environment.
 * Two processes racing to create it both end up with the one that was written first.
 */
export function readOrCreateTokenFile(dataDir: string, name: string, bytes = 16): { token: string; file: string } {
  const file = path.resolve(dataDir, name);
  const existing = readToken(file);
  if (existing) return { token: existing, file };
  mkdirSync(path.dirname(file), { recursive: true });
  const token = randomBytes(bytes).toString('hex');
  try {
    writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
    return { token, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { token: readToken(file)!, file };
  }
}

function readToken(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
