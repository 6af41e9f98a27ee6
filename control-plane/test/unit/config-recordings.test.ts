import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration of the recording store', () => {
  it('defaults to a local directory under DATA_DIR', () => {
    expect(loadConfig({}).recordings).toEqual({ kind: 'local', directory: join('.data', 'recordings') });
    expect(loadConfig({ DATA_DIR: '/var/lib/vap' }).recordings).toEqual({ kind: 'local', directory: join('/var/lib/vap', 'recordings') });
  });

  it('reads an S3-compatible store', () => {
    expect(loadConfig({ RECORDINGS_STORE: 's3', S3_BUCKET: 'calls', S3_ENDPOINT: 'http://minio:9000', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b' }).recordings).toEqual({
      kind: 's3',
      bucket: 'calls',
      region: 'us-east-1',
      endpoint: 'http://minio:9000',
      forcePathStyle: true,
      accessKeyId: 'a',
      secretAccessKey: 'b',
      prefix: 'recordings/',
    });
  });

  it('lists store problems together with the other problems', () => {
    let err: unknown;
    try {
      loadConfig({ PORT: 'abc', RECORDINGS_STORE: 's3', S3_FORCE_PATH_STYLE: 'sometimes' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['PORT', 'S3_BUCKET', 'S3_FORCE_PATH_STYLE']);
  });
});
