import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { unixSocketDir } from '../../src/db/embedded-postgres.js';

describe('unixSocketDir: where the embedded Postgres puts its Unix socket', () => {
  it('is the data directory when <dir>/.s.PGSQL.<port> fits a socket path', () => {
    expect(unixSocketDir('/srv/vap/data/postgres', 54329, 'linux')).toBe('/srv/vap/data/postgres');
    expect(unixSocketDir('/Users/ana/vap/postgres', 54329, 'darwin')).toBe('/Users/ana/vap/postgres');
  });

  it('is null (TCP only) when the socket path would pass 103 bytes, counted in bytes', () => {
    const socketName = '.s.PGSQL.54329';
    // A directory whose socket path is exactly 103 bytes fits; one byte more does not.
    const fits = `/${'d'.repeat(103 - 1 - 1 - socketName.length)}`;
    expect(Buffer.byteLength(path.join(fits, socketName))).toBe(103);
    expect(unixSocketDir(fits, 54329, 'linux')).toBe(fits);
    expect(unixSocketDir(`${fits}d`, 54329, 'linux')).toBeNull();
    // Multi-byte characters count as their UTF-8 bytes.
    const accented = `/${'é'.repeat(45)}`;
    expect(accented.length + 1 + socketName.length).toBeLessThanOrEqual(103);
    expect(unixSocketDir(accented, 54329, 'linux')).toBeNull();
  });

  it('is null on Windows', () => {
    expect(unixSocketDir('C:\\vap\\postgres', 54329, 'win32')).toBeNull();
  });
});
