/**
 * Where call recordings (and later other blobs) are kept: a local directory by default,
 * any S3-compatible object store when configured. Media gateways `put`; control planes
 * sign links, `delete` and (local store) serve the bytes. Keys are relative paths such as
 * `ten_…/conv_….mp3`: no leading slash, no `..`, only `[A-Za-z0-9_./-]`.
 */
export interface ObjectStore {
  readonly kind: 'local' | 's3';
  /** Writes (or replaces) an object in one piece; resolves when it is durable. */
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
  /**
   * Writes (or replaces) an object from a local file, streamed: the file is never held in
   * memory whole (uploads of tens of MB). The file is left in place; resolves when durable.
   */
  putFile(key: string, filePath: string, contentType: string): Promise<void>;
  /**
   * Streams the object into `filePath` (created or truncated); false, with no file written,
   * when the object does not exist.
   */
  getToFile(key: string, filePath: string): Promise<boolean>;
  /** The object's bytes, or null when it does not exist. */
  get(key: string): Promise<Uint8Array | null>;
  /** Whether the object exists. */
  exists(key: string): Promise<boolean>;
  /** Deletes the object; deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
}

/** Configuration of the recording store, as both services read it from the environment. */
export type ObjectStoreConfig =
  | { kind: 'local'; directory: string }
  | {
      kind: 's3';
      bucket: string;
      region: string;
      /** Custom endpoint of an S3-compatible store (MinIO, R2, a local test server); unset for AWS. */
      endpoint?: string;
      forcePathStyle: boolean;
      accessKeyId?: string;
      secretAccessKey?: string;
      /** Key prefix inside the bucket, e.g. `recordings/`. */
      prefix: string;
    };

const KEY = /^(?!\/)(?!.*\.\.)[A-Za-z0-9_./-]{1,512}$/;

/** Throws on a key that could escape the store's root (see {@link ObjectStore}). */
export function assertObjectKey(key: string): void {
  if (!KEY.test(key)) throw new Error(`invalid object key ${JSON.stringify(key)}`);
}
