import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ObjectStoreConfigError, objectStoreConfigFromEnv } from '../../src/storage/object-store-config.js';

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    objectStoreConfigFromEnv(env, '.data');
  } catch (err) {
    if (err instanceof ObjectStoreConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected an ObjectStoreConfigError');
}

describe('objectStoreConfigFromEnv', () => {
  it('defaults to a local directory under the data directory', () => {
    expect(objectStoreConfigFromEnv({}, '/var/lib/vap')).toEqual({ kind: 'local', directory: join('/var/lib/vap', 'recordings') });
    expect(objectStoreConfigFromEnv({ RECORDINGS_STORE: '', RECORDINGS_DIR: '' }, '.data')).toEqual({ kind: 'local', directory: join('.data', 'recordings') });
  });

  it('takes RECORDINGS_DIR for the local store', () => {
    expect(objectStoreConfigFromEnv({ RECORDINGS_STORE: 'local', RECORDINGS_DIR: '/srv/rec' }, '.data')).toEqual({ kind: 'local', directory: '/srv/rec' });
  });

  it('refuses an unknown store kind, naming the variable', () => {
    expect(problemsOf({ RECORDINGS_STORE: 'gcs' })).toEqual([expect.stringMatching(/^RECORDINGS_STORE: must be local or s3/)]);
  });

  it('requires S3_BUCKET for s3', () => {
    expect(problemsOf({ RECORDINGS_STORE: 's3' })).toEqual(['S3_BUCKET: required when RECORDINGS_STORE=s3']);
  });

  it('reads an AWS configuration with its defaults', () => {
    expect(objectStoreConfigFromEnv({ RECORDINGS_STORE: 's3', S3_BUCKET: 'calls' }, '.data')).toEqual({
      kind: 's3',
      bucket: 'calls',
      region: 'us-east-1',
      forcePathStyle: false,
      prefix: 'recordings/',
    });
  });

  it('reads an S3-compatible endpoint with path-style addressing by default, keys and a prefix', () => {
    const config = objectStoreConfigFromEnv(
      {
        RECORDINGS_STORE: 's3',
        S3_BUCKET: 'calls',
        S3_REGION: 'eu-central-1',
        S3_ENDPOINT: 'http://127.0.0.1:9000/',
        S3_ACCESS_KEY_ID: 'AKID',
        S3_SECRET_ACCESS_KEY: 'SECRET',
        S3_PREFIX: '/tenant-audio',
      },
      '.data',
    );
    expect(config).toEqual({
      kind: 's3',
      bucket: 'calls',
      region: 'eu-central-1',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      accessKeyId: 'AKID',
      secretAccessKey: 'SECRET',
      prefix: 'tenant-audio/',
    });
    expect(objectStoreConfigFromEnv({ RECORDINGS_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'https://r2.example.com', S3_FORCE_PATH_STYLE: 'false' }, '.data')).toMatchObject({
      forcePathStyle: false,
    });
  });

  it('lists every S3 problem at once', () => {
    expect(
      problemsOf({ RECORDINGS_STORE: 's3', S3_ENDPOINT: 'ftp://x', S3_FORCE_PATH_STYLE: 'maybe', S3_ACCESS_KEY_ID: 'AKID', S3_PREFIX: 'a/../b' }),
    ).toEqual([
      'S3_BUCKET: required when RECORDINGS_STORE=s3',
      'S3_ENDPOINT: must be an http:// or https:// URL',
      'S3_FORCE_PATH_STYLE: must be true or false',
      'S3_SECRET_ACCESS_KEY: required with S3_ACCESS_KEY_ID',
      'S3_PREFIX: only letters, digits and _ . / - (no ..)',
    ]);
    expect(problemsOf({ RECORDINGS_STORE: 's3', S3_BUCKET: 'b', S3_SECRET_ACCESS_KEY: 'x' })).toEqual(['S3_ACCESS_KEY_ID: required with S3_SECRET_ACCESS_KEY']);
  });
});
