import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../src/storage/local-object-store.js';
import { createObjectStore } from '../../src/storage/object-store-config.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'vap-local-store-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const bytes = (...values: number[]) => new Uint8Array(values);

describe('LocalObjectStore', () => {
  it('writes an object under its key, creating directories, and reads the same bytes back', async () => {
    const store = new LocalObjectStore(join(root, 'recordings'));
    await store.put('ten_a/conv_1.mp3', bytes(1, 2, 3, 255), 'audio/mpeg');
    expect(await readFile(join(root, 'recordings', 'ten_a', 'conv_1.mp3'))).toEqual(Buffer.from([1, 2, 3, 255]));
    expect(await store.get('ten_a/conv_1.mp3')).toEqual(bytes(1, 2, 3, 255));
    expect(await store.exists('ten_a/conv_1.mp3')).toBe(true);
    expect(await store.sizeOf('ten_a/conv_1.mp3')).toBe(4);
  });

  it('replaces an existing object whole and leaves no temporary files behind', async () => {
    const store = new LocalObjectStore(root);
    await store.put('ten_a/conv_1.mp3', new Uint8Array(100_000).fill(7), 'audio/mpeg');
    await store.put('ten_a/conv_1.mp3', bytes(9), 'audio/mpeg');
    expect(await store.get('ten_a/conv_1.mp3')).toEqual(bytes(9));
    expect(await readdir(join(root, 'ten_a'))).toEqual(['conv_1.mp3']);
  });

  it('answers null / false for a missing object, also when its directory is missing', async () => {
    const store = new LocalObjectStore(root);
    expect(await store.get('ten_none/conv_1.mp3')).toBeNull();
    expect(await store.exists('ten_none/conv_1.mp3')).toBe(false);
    expect(await store.sizeOf('ten_none/conv_1.mp3')).toBeNull();
  });

  it('does not count a directory as an object', async () => {
    const store = new LocalObjectStore(root);
    await store.put('ten_a/conv_1.mp3', bytes(1), 'audio/mpeg');
    expect(await store.exists('ten_a')).toBe(false);
  });

  it('deletes an object, and deleting a missing one is not an error', async () => {
    const store = new LocalObjectStore(root);
    await store.put('ten_a/conv_1.mp3', bytes(1), 'audio/mpeg');
    await store.delete('ten_a/conv_1.mp3');
    expect(await store.exists('ten_a/conv_1.mp3')).toBe(false);
    await expect(stat(join(root, 'ten_a', 'conv_1.mp3'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(store.delete('ten_a/conv_1.mp3')).resolves.toBeUndefined();
    await expect(store.delete('ten_missing/conv_9.mp3')).resolves.toBeUndefined();
  });

  it('refuses keys that could leave its root or alias another key', async () => {
    const store = new LocalObjectStore(join(root, 'inner'));
    for (const key of ['../escape.mp3', '/etc/passwd', 'a/../../b', 'a//b.mp3', './a.mp3', 'a/./b.mp3', '.', '', 'a b.mp3']) {
      await expect(store.put(key, bytes(1), 'audio/mpeg'), key).rejects.toThrow(/invalid object key/);
      await expect(store.get(key), key).rejects.toThrow(/invalid object key/);
      await expect(store.delete(key), key).rejects.toThrow(/invalid object key/);
    }
    expect(await readdir(root)).toEqual([]);
  });

  it('is what createObjectStore builds for a local configuration', async () => {
    const store = createObjectStore({ kind: 'local', directory: root });
    expect(store.kind).toBe('local');
    expect(store).toBeInstanceOf(LocalObjectStore);
    await store.put('k/x.wav', bytes(4, 5), 'audio/wav');
    expect(await store.get('k/x.wav')).toEqual(bytes(4, 5));
  });
});
