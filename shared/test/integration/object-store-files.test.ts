/**
 * `putFile` / `getToFile`: objects written from and read to local files through streams, in
 * both stores (a local directory and s3rver, a real S3-compatible server): byte-exact round
 * trips of a multi-MB file, missing objects, replacement, and agreement with put/get.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../src/storage/local-object-store.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startS3rver } from '../start-s3rver.js';
import type { TestS3rver } from '../start-s3rver.js';

let dir: string;
let s3: TestS3rver;
let s3Store: S3ObjectStore;
let localStore: LocalObjectStore;
/** 6 MB + 123 bytes of random data (not a multiple of any stream chunk size). */
let bigFile: string;
let bigDigest: string;

const sha256 = async (path: string) => createHash('sha256').update(await readFile(path)).digest('hex');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vap-store-files-'));
  s3 = await startS3rver();
  s3Store = new S3ObjectStore(s3.config);
  localStore = new LocalObjectStore(join(dir, 'store'));
  bigFile = join(dir, 'big.bin');
  const bytes = randomBytes(6 * 1024 * 1024 + 123);
  await writeFile(bigFile, bytes);
  bigDigest = createHash('sha256').update(bytes).digest('hex');
}, 30_000);

afterAll(async () => {
  await s3Store?.close();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each([
  ['local', () => localStore as ObjectStore],
  ['s3', () => s3Store as ObjectStore],
])('%s store: files in and out through streams', (kind, store) => {
  it('round-trips a multi-MB file byte for byte, and get() sees the same bytes', async () => {
    const key = `knowledge-base/ten_${kind}/kb_1/big.bin`;
    await store().putFile(key, bigFile, 'application/octet-stream');
    expect(existsSync(bigFile)).toBe(true); // the source is left to its owner
    const out = join(dir, `${kind}-out.bin`);
    expect(await store().getToFile(key, out)).toBe(true);
    expect(await sha256(out)).toBe(bigDigest);
    const viaGet = await store().get(key);
    expect(viaGet?.byteLength).toBe(6 * 1024 * 1024 + 123);
    expect(createHash('sha256').update(viaGet!).digest('hex')).toBe(bigDigest);
  }, 30_000);

  it('replaces an object, truncates the target file, and round-trips an empty file', async () => {
    const key = `ten_${kind}/replace.txt`;
    const a = join(dir, `${kind}-a.txt`);
    const empty = join(dir, `${kind}-empty.txt`);
    await writeFile(a, 'short');
    await writeFile(empty, '');
    await store().put(key, new TextEncoder().encode('a much longer first version'), 'text/plain');
    await store().putFile(key, a, 'text/plain');
    const out = join(dir, `${kind}-replace-out.txt`);
    await writeFile(out, 'previous contents that are longer than the object');
    expect(await store().getToFile(key, out)).toBe(true);
    expect(await readFile(out, 'utf8')).toBe('short');

    await store().putFile(`ten_${kind}/empty.txt`, empty, 'text/plain');
    expect(await store().getToFile(`ten_${kind}/empty.txt`, out)).toBe(true);
    expect((await readFile(out)).byteLength).toBe(0);
  });

  it('answers false for a missing object and writes no file', async () => {
    const out = join(dir, `${kind}-missing.bin`);
    expect(await store().getToFile(`ten_${kind}/nothing-here.bin`, out)).toBe(false);
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a missing source file and an unsafe key without storing anything', async () => {
    await expect(store().putFile(`ten_${kind}/ghost.bin`, join(dir, 'no-such-file'), 'application/octet-stream')).rejects.toThrow(/ENOENT/);
    expect(await store().exists(`ten_${kind}/ghost.bin`)).toBe(false);
    await expect(store().putFile('../escape.bin', bigFile, 'application/octet-stream')).rejects.toThrow(/invalid object key/);
  });
});

describe('local store: putFile is atomic', () => {
  it('leaves no temporary file behind, including after a failed copy', async () => {
    const store = new LocalObjectStore(join(dir, 'atomic'));
    await store.putFile('ten_a/doc.bin', bigFile, 'application/octet-stream');
    await expect(store.putFile('ten_a/doc.bin', join(dir, 'no-such-file'), 'application/octet-stream')).rejects.toThrow(/ENOENT/);
    // The failed replacement kept the old object whole.
    expect(await sha256(store.pathOf('ten_a/doc.bin'))).toBe(bigDigest);
    expect(await readdir(join(dir, 'atomic', 'ten_a'))).toEqual(['doc.bin']);
  });
});
