import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { assertObjectKey, type ObjectStore } from './object-store.js';

/**
 * An {@link ObjectStore} in a local directory: one file per key under `directory`, with
 * the key's `/` as sub-directories. Writes are atomic (temporary file in the same
 * directory, fsync, rename, fsync of the directory), so a reader never sees half a file
 * and a crash leaves either the old object or the new one. Content types are not kept:
 * whoever serves the file derives it from the key's extension.
 */
export class LocalObjectStore implements ObjectStore {
  readonly kind = 'local' as const;
  /** Absolute root directory; created on the first `put`. */
  readonly directory: string;

  constructor(directory: string) {
    this.directory = resolve(directory);
  }

  /**
   * The file that holds `key` (which need not exist). For a control plane that streams the
   * file itself instead of loading it whole through {@link get}.
   */
  pathOf(key: string): string {
    assertObjectKey(key);
    const path = join(this.directory, key);
    const rel = relative(this.directory, path);
    // assertObjectKey already refuses `..` and leading slashes; this also refuses `.` and `a/./`.
    if (rel === '' || rel.startsWith('..') || rel.startsWith(sep) || rel !== key.split('/').join(sep)) {
      throw new Error(`invalid object key ${JSON.stringify(key)}`);
    }
    return path;
  }

  async put(key: string, body: Uint8Array, _contentType: string): Promise<void> {
    await this.writeAtomically(key, async (tmp) => {
      const file = await open(tmp, 'wx', 0o640);
      try {
        await file.writeFile(body);
        await file.sync();
      } finally {
        await file.close();
      }
    });
  }

  /** Copies `filePath` through fs streams into place (never whole in memory), atomically like {@link put}. */
  async putFile(key: string, filePath: string, _contentType: string): Promise<void> {
    await this.writeAtomically(key, async (tmp) => {
      await pipeline(createReadStream(filePath), createWriteStream(tmp, { flags: 'wx', mode: 0o640 }));
      // fsync applies to the file, whichever descriptor asks.
      const file = await open(tmp, 'r+');
      try {
        await file.sync();
      } finally {
        await file.close();
      }
    });
  }

  /** `write` fills (and fsyncs) a new temporary file beside the object, which is then renamed over it; the directory is fsynced. */
  private async writeAtomically(key: string, write: (tmp: string) => Promise<void>): Promise<void> {
    const path = this.pathOf(key);
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${randomBytes(8).toString('hex')}.tmp`);
    try {
      await write(tmp);
      await rename(tmp, path);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await syncDirectory(dir);
  }

  async getToFile(key: string, filePath: string): Promise<boolean> {
    const path = this.pathOf(key);
    try {
      await pipeline(createReadStream(path), createWriteStream(filePath));
      return true;
    } catch (err) {
      await rm(filePath, { force: true });
      if (isNotFound(err) && (err as NodeJS.ErrnoException).path === path) return false;
      throw err;
    }
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      const bytes = await readFile(this.pathOf(key));
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.sizeOf(key)) !== null;
  }

  /** The object's size in bytes, or null when it does not exist. */
  async sizeOf(key: string): Promise<number | null> {
    try {
      const info = await stat(this.pathOf(key));
      return info.isFile() ? info.size : null;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathOf(key));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Makes a rename in `dir` durable. Some platforms cannot open a directory for fsync; then the rename is as durable as the OS makes it. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // EISDIR/EPERM/EINVAL on platforms without directory fsync: nothing more to do.
  } finally {
    await handle?.close();
  }
}

function isNotFound(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
