import { join } from 'node:path';
import { LocalObjectStore } from './local-object-store.js';
import { S3ObjectStore } from './s3-object-store.js';
import type { ObjectStore, ObjectStoreConfig } from './object-store.js';

/** The recording store's configuration is invalid; `problems` names each variable at fault. */
export class ObjectStoreConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid recording store configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ObjectStoreConfigError';
  }
}

/** Every variable {@link objectStoreConfigFromEnv} reads (for `.env.example` checks and docs). */
export const OBJECT_STORE_ENV_VARS = [
  'RECORDINGS_STORE',
  'RECORDINGS_DIR',
  'S3_BUCKET',
  'S3_REGION',
  'S3_ENDPOINT',
  'S3_FORCE_PATH_STYLE',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_PREFIX',
] as const;

/**
 * Reads the recording store's settings from an environment (both services call it from
 * their `config.ts`, so they agree). Empty values count as unset.
 * - `RECORDINGS_STORE`: `local` (default) or `s3`.
 * - `RECORDINGS_DIR`: local store's directory, default `<dataDir>/recordings`.
 * - `S3_BUCKET` (required for s3), `S3_REGION` (default `us-east-1`), `S3_ENDPOINT`
 *   (S3-compatible servers), `S3_FORCE_PATH_STYLE` (default true when `S3_ENDPOINT` is set),
 *   `S3_ACCESS_KEY_ID` + `S3_SECRET_ACCESS_KEY` (both or neither; neither = the AWS SDK's
 *   default credential chain), `S3_PREFIX` (default `recordings/`; a trailing `/` is added).
 * @throws ObjectStoreConfigError listing every problem.
 */
export function objectStoreConfigFromEnv(env: Record<string, string | undefined>, dataDir: string): ObjectStoreConfig {
  const get = (name: (typeof OBJECT_STORE_ENV_VARS)[number]): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const problems: string[] = [];
  const kind = get('RECORDINGS_STORE') ?? 'local';
  if (kind !== 'local' && kind !== 's3') {
    throw new ObjectStoreConfigError([`RECORDINGS_STORE: must be local or s3 (got ${JSON.stringify(kind)})`]);
  }
  if (kind === 'local') {
    return { kind: 'local', directory: get('RECORDINGS_DIR') ?? join(dataDir, 'recordings') };
  }

  const bucket = get('S3_BUCKET');
  if (bucket === undefined) problems.push('S3_BUCKET: required when RECORDINGS_STORE=s3');
  const endpoint = get('S3_ENDPOINT');
  if (endpoint !== undefined && !isHttpUrl(endpoint)) problems.push('S3_ENDPOINT: must be an http:// or https:// URL');
  let forcePathStyle = endpoint !== undefined;
  const rawPathStyle = get('S3_FORCE_PATH_STYLE');
  if (rawPathStyle !== undefined) {
    const parsed = parseBool(rawPathStyle);
    if (parsed === undefined) problems.push('S3_FORCE_PATH_STYLE: must be true or false');
    else forcePathStyle = parsed;
  }
  const accessKeyId = get('S3_ACCESS_KEY_ID');
  const secretAccessKey = get('S3_SECRET_ACCESS_KEY');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    problems.push(accessKeyId === undefined ? 'S3_ACCESS_KEY_ID: required with S3_SECRET_ACCESS_KEY' : 'S3_SECRET_ACCESS_KEY: required with S3_ACCESS_KEY_ID');
  }
  let prefix = (get('S3_PREFIX') ?? 'recordings/').replace(/^\/+/, '');
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  if (!/^[A-Za-z0-9_./-]*$/.test(prefix) || prefix.includes('..')) problems.push('S3_PREFIX: only letters, digits and _ . / - (no ..)');
  if (problems.length > 0 || bucket === undefined) throw new ObjectStoreConfigError(problems);

  return {
    kind: 's3',
    bucket,
    region: get('S3_REGION') ?? 'us-east-1',
    ...(endpoint === undefined ? {} : { endpoint: endpoint.replace(/\/$/, '') }),
    forcePathStyle,
    ...(accessKeyId === undefined ? {} : { accessKeyId, secretAccessKey }),
    prefix,
  };
}

/** Builds the store a configuration describes. Nothing is contacted until the first call. */
export function createObjectStore(config: ObjectStoreConfig): ObjectStore {
  switch (config.kind) {
    case 'local':
      return new LocalObjectStore(config.directory);
    case 's3':
      return new S3ObjectStore(config);
  }
}

function parseBool(raw: string): boolean | undefined {
  const v = raw.toLowerCase();
  if (v === 'true' || v === '1' || v === 'yes') return true;
  if (v === 'false' || v === '0' || v === 'no') return false;
  return undefined;
}

function isHttpUrl(raw: string): boolean {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
