/**
 * s3rver for tests: a real S3-compatible HTTP server (path-style, SigV4 requests; the expiry
 * of pre-signed URLs is checked against its own clock) on loopback, in a temp dir. Used by
 * shared's S3ObjectStore tests and, by relative path, by the control plane's recording tests.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import type { ObjectStoreConfig } from '../src/storage/object-store.js';

/** A running s3rver with one bucket. */
export interface TestS3rver {
  /** An `s3` object store configuration for the bucket (prefix `recordings/`). */
  config: Extract<ObjectStoreConfig, { kind: 's3' }>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

/** Starts s3rver on a free loopback port with the bucket `calls`. */
export async function startS3rver(): Promise<TestS3rver> {
  const dir = await mkdtemp(join(tmpdir(), 'vap-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: 'calls' }] });
  try {
    const { port } = await server.run();
    return {
      config: {
        kind: 's3',
        bucket: 'calls',
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        forcePathStyle: true,
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
        prefix: 'recordings/',
      },
      close: async () => {
        await server.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
