import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as S3SdkModule from '@aws-sdk/client-s3';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { assertObjectKey, type ObjectStore, type ObjectStoreConfig } from './object-store.js';

type S3Config = Extract<ObjectStoreConfig, { kind: 's3' }>;
type S3Sdk = typeof S3SdkModule;

/**
 * An {@link ObjectStore} in an S3 bucket (AWS or any S3-compatible server), on the AWS SDK
 * v3. Keys are stored under `config.prefix`. The SDK is loaded on first use, so processes
 * that keep recordings locally never pay for it.
 */
export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly prefix: string;
  private readonly config: S3Config;
  private loaded: Promise<{ sdk: S3Sdk; client: S3Client }> | undefined;

  constructor(config: S3Config) {
    this.config = config;
    this.bucket = config.bucket;
    this.prefix = config.prefix;
  }

  /** The bucket key of a store key (`recordings/ten_…/conv_….mp3`). */
  objectKey(key: string): string {
    assertObjectKey(key);
    return `${this.prefix}${key}`;
  }

  async put(key: string, body: Uint8Array, contentType: string): Promise<void> {
    const { sdk, client } = await this.load();
    await client.send(
      new sdk.PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Body: body, ContentType: contentType, ContentLength: body.byteLength }),
    );
  }

  /**
   * One PutObject whose body is a read stream of the file with its `ContentLength`: the SDK
   * sends it as it reads, so the file is never in memory whole (S3's single PUT takes up to 5 GB).
   */
  async putFile(key: string, filePath: string, contentType: string): Promise<void> {
    const { sdk, client } = await this.load();
    const { size } = await stat(filePath);
    const body = createReadStream(filePath);
    try {
      await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Body: body, ContentType: contentType, ContentLength: size }));
    } finally {
      body.destroy();
    }
  }

  /** GetObject with its body piped to the file as it arrives. */
  async getToFile(key: string, filePath: string): Promise<boolean> {
    const { sdk, client } = await this.load();
    let out;
    try {
      out = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
    const body = out.Body;
    try {
      // In Node the SDK's body is an http.IncomingMessage (a Readable) with helper methods mixed in.
      const source = body === undefined ? Readable.from([]) : body instanceof Readable ? body : Readable.fromWeb(body.transformToWebStream() as Parameters<typeof Readable.fromWeb>[0]);
      await pipeline(source, createWriteStream(filePath));
    } catch (err) {
      await rm(filePath, { force: true });
      throw err;
    }
    return true;
  }

  async get(key: string): Promise<Uint8Array | null> {
    const { sdk, client } = await this.load();
    try {
      const out = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      if (out.Body === undefined) return new Uint8Array(0);
      return await out.Body.transformToByteArray();
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async exists(key: string): Promise<boolean> {
    const { sdk, client } = await this.load();
    try {
      await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const { sdk, client } = await this.load();
    try {
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      // S3 answers 204 for a missing key; some compatible servers answer 404.
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * A pre-signed GetObject URL that anyone holding it may fetch until `expiresInSeconds`
   * after `opts.now` (default: the current time). The link is computed locally; nothing is
   * sent to the store, so it is issued whether or not the object exists.
   */
  async presignGet(key: string, expiresInSeconds: number, opts: { now?: Date } = {}): Promise<string> {
    const [{ sdk, client }, { getSignedUrl }] = await Promise.all([this.load(), import('@aws-sdk/s3-request-presigner')]);
    return getSignedUrl(client, new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }), {
      expiresIn: expiresInSeconds,
      ...(opts.now === undefined ? {} : { signingDate: opts.now }),
    });
  }

  /** Closes the SDK's connection pool (a process that stops, a test that ends). */
  async close(): Promise<void> {
    if (this.loaded === undefined) return;
    const { client } = await this.loaded;
    client.destroy();
  }

  private load(): Promise<{ sdk: S3Sdk; client: S3Client }> {
    this.loaded ??= import('@aws-sdk/client-s3').then((sdk) => ({ sdk, client: new sdk.S3Client(clientConfig(this.config)) }));
    return this.loaded;
  }
}

function clientConfig(config: S3Config): S3ClientConfig {
  return {
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    ...(config.endpoint === undefined
      ? {}
      : {
          endpoint: config.endpoint,
          // Since 2025 the SDK adds CRC32 checksums (aws-chunked trailers on uploads) by default;
          // many S3-compatible servers do not understand them, so only send them when required.
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        }),
    ...(config.accessKeyId === undefined || config.secretAccessKey === undefined
      ? {}
      : { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }),
  };
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  // A missing bucket is a configuration error, not a missing object (HEAD cannot tell them apart).
  if (e?.name === 'NoSuchBucket') return false;
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}
