import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStoreConfig } from '../../src/storage/object-store.js';
import { createObjectStore } from '../../src/storage/object-store-config.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startS3rver } from '../start-s3rver.js';
import type { TestS3rver } from '../start-s3rver.js';

// s3rver: a real S3-compatible HTTP server; see start-s3rver.ts.
let s3: TestS3rver;
let config: Extract<ObjectStoreConfig, { kind: 's3' }>;
let store: S3ObjectStore;

beforeAll(async () => {
  s3 = await startS3rver();
  config = s3.config;
  store = createObjectStore(config) as S3ObjectStore;
});

afterAll(async () => {
  await store?.close();
  await s3?.close();
});

const audio = () => new Uint8Array(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));

describe('S3ObjectStore against an S3-compatible server', () => {
  it('is what createObjectStore builds for an s3 configuration', () => {
    expect(store).toBeInstanceOf(S3ObjectStore);
    expect(store.kind).toBe('s3');
  });

  it('puts an object under the prefix and gets the same bytes back', async () => {
    const body = audio();
    await store.put('ten_a/conv_1.mp3', body, 'audio/mpeg');
    expect(await store.exists('ten_a/conv_1.mp3')).toBe(true);
    expect(await store.get('ten_a/conv_1.mp3')).toEqual(body);
    // Stored under the prefix: a raw path-style GET with a presigned URL of the full key works.
    const res = await fetch(await store.presignGet('ten_a/conv_1.mp3', 60));
    expect(new URL(res.url).pathname).toBe('/calls/recordings/ten_a/conv_1.mp3');
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    await res.arrayBuffer();
  });

  it('answers null / false for a missing object', async () => {
    expect(await store.get('ten_a/conv_missing.mp3')).toBeNull();
    expect(await store.exists('ten_a/conv_missing.mp3')).toBe(false);
  });

  it('deletes an object, and deleting a missing one is not an error', async () => {
    await store.put('ten_a/conv_2.mp3', new Uint8Array([1, 2, 3]), 'audio/mpeg');
    await store.delete('ten_a/conv_2.mp3');
    expect(await store.exists('ten_a/conv_2.mp3')).toBe(false);
    expect(await store.get('ten_a/conv_2.mp3')).toBeNull();
    await expect(store.delete('ten_a/conv_2.mp3')).resolves.toBeUndefined();
  });

  it('serves the bytes to a plain fetch of a pre-signed URL', async () => {
    const body = audio();
    await store.put('ten_b/conv_3.mp3', body, 'audio/mpeg');
    const url = await store.presignGet('ten_b/conv_3.mp3', 3600);
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('3600');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(body);
  });

  // s3rver checks the expiry of SigV4 query signatures but not the signature itself
  // (its V4 verification is unimplemented), so a tampered signature cannot be tested here.
  it('refuses a pre-signed URL after its expiry (signature tampering is not checked by s3rver)', async () => {
    await store.put('ten_b/conv_4.mp3', new Uint8Array([9, 9, 9]), 'audio/mpeg');
    // Signed 2 hours ago for 1 hour: s3rver checks X-Amz-Date + X-Amz-Expires against its clock.
    const expired = await store.presignGet('ten_b/conv_4.mp3', 3600, { now: new Date(Date.now() - 2 * 3600_000) });
    const late = await fetch(expired);
    expect(late.status).toBe(403);
    expect(await late.text()).toContain('Request has expired');
    // Signed 30 minutes ago for 1 hour: still valid.
    const recent = await fetch(await store.presignGet('ten_b/conv_4.mp3', 3600, { now: new Date(Date.now() - 1800_000) }));
    expect(recent.status).toBe(200);
    expect(new Uint8Array(await recent.arrayBuffer())).toEqual(new Uint8Array([9, 9, 9]));
  });

  it('reports a missing bucket as an error, not as a missing object', async () => {
    const wrong = new S3ObjectStore({ ...config, bucket: 'no-such-bucket' });
    try {
      await expect(wrong.get('ten_a/conv_1.mp3')).rejects.toMatchObject({ name: 'NoSuchBucket' });
    } finally {
      await wrong.close();
    }
  });

  it('refuses keys that could leave its prefix', async () => {
    await expect(store.put('../x.mp3', new Uint8Array([1]), 'audio/mpeg')).rejects.toThrow(/invalid object key/);
    await expect(store.presignGet('/x.mp3', 60)).rejects.toThrow(/invalid object key/);
  });
});
