import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { AppError } from '@vap/shared';
import { SNIFF_HEAD_BYTES } from './parsing/index.js';
import { unstorableTextReason } from '../../db/storable-text.js';
import { fileTooLarge } from './problems.js';

/** The spec's limit per knowledge-base file. */
export const KB_MAX_FILE_BYTES = 50 * 1024 * 1024;
/** Text fields (`name`, `agentIds`, `metadata`) are small; a longer one is cut by busboy and refused. */
export const KB_MAX_FIELD_BYTES = 64 * 1024;

/** An upload received to a temporary file, its text fields as sent (checked by the service). */
export interface ReceivedUpload {
  tempPath: string;
  /** The client's filename (`upload` when it sent none). */
  filename: string;
  /** The part's Content-Type as declared. */
  declaredMime: string | null;
  sizeBytes: number;
  /** The first {@link SNIFF_HEAD_BYTES} bytes, for content sniffing. */
  head: Uint8Array;
  fields: { name?: string; agentIds?: string; metadata?: string };
  /** Removes the temporary file (idempotent). */
  discard(): Promise<void>;
}

const TEXT_FIELDS = new Set(['name', 'agentIds', 'metadata']);

/**
 * Reads a `multipart/form-data` upload: the `file` part is streamed to a temporary file
 * under `tempDir` while its bytes are counted (never held in memory); past `maxBytes` the
 * copy stops, the temporary file is removed and a 413 is thrown. Text fields may come
 * before or after the file. The caller owns the temporary file (`discard`).
 */
export async function receiveUpload(req: FastifyRequest, tempDir: string, maxBytes = KB_MAX_FILE_BYTES): Promise<ReceivedUpload> {
  if (!req.isMultipart()) {
    throw new AppError('unsupported-media-type', 'Upload a document as multipart/form-data with a `file` part.', { errors: [{ field: 'file', message: 'send multipart/form-data' }] });
  }
  // A declared length far past the limit is refused before reading (multipart framing and fields take well under 1 MB).
  const declaredLength = Number(req.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declaredLength) && declaredLength > maxBytes + 1024 * 1024) throw fileTooLarge(maxBytes);
  let received: Omit<ReceivedUpload, 'fields' | 'discard'> | null = null;
  const temps: string[] = [];
  const discard = async () => {
    await Promise.all(temps.map((p) => rm(p, { force: true })));
  };
  const fields: ReceivedUpload['fields'] = {};
  try {
    // busboy may read one byte past the limit so the counter below sees the overflow.
    const parts = req.parts({ limits: { fileSize: maxBytes + 1, files: 1, fields: 10, fieldSize: KB_MAX_FIELD_BYTES, parts: 12 } });
    for await (const part of parts) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || received) {
          part.file.resume();
          throw new AppError('validation', `Only one file part, named "file", is accepted (got "${part.fieldname}").`, { errors: [{ field: part.fieldname, message: 'unexpected file part; send the document as "file"' }] });
        }
        const tempPath = join(tempDir, `upload-${randomBytes(12).toString('hex')}`);
        temps.push(tempPath);
        const counter = new ByteCounter(maxBytes);
        try {
          await pipeline(part.file, counter, createWriteStream(tempPath, { flags: 'wx' }));
        } catch (err) {
          if (counter.overflow) throw fileTooLarge(maxBytes);
          throw err;
        }
        if (counter.overflow || part.file.truncated) throw fileTooLarge(maxBytes);
        const badName = part.filename ? unstorableTextReason(part.filename) : null;
        if (badName !== null) throw new AppError('validation', 'The file name cannot be stored as it is.', { errors: [{ field: 'file', message: `its name ${badName}` }] });
        const declared = part.mimetype && part.mimetype !== 'application/octet-stream' ? part.mimetype : null;
        received = { tempPath, filename: part.filename || 'upload', declaredMime: declared, sizeBytes: counter.bytes, head: counter.headBytes() };
      } else if (TEXT_FIELDS.has(part.fieldname)) {
        if (part.valueTruncated) throw new AppError('validation', `${part.fieldname} is longer than ${KB_MAX_FIELD_BYTES} bytes.`, { errors: [{ field: part.fieldname, message: `must be at most ${KB_MAX_FIELD_BYTES} bytes` }] });
        const value = String(part.value);
        const bad = unstorableTextReason(value);
        if (bad !== null) throw new AppError('validation', `${part.fieldname} cannot be stored as it is.`, { errors: [{ field: part.fieldname, message: bad }] });
        fields[part.fieldname as keyof ReceivedUpload['fields']] = value;
      }
    }
  } catch (err) {
    await discard();
    if (err instanceof AppError) throw err;
    const code = (err as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw fileTooLarge(maxBytes);
    if (code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
      throw new AppError('validation', 'The upload has too many parts: send one `file` and the fields name, agentIds, metadata.', { errors: [{ field: 'file', message: 'only one file and three fields are accepted' }] });
    }
    if (code === 'FST_MP_PREMATURE_CLOSE' || code === 'FST_PROTO_VIOLATION') throw new AppError('malformed-request', 'The multipart body ended early or is malformed.');
    if (err instanceof Error && /multipart|boundary/i.test(err.message)) throw new AppError('malformed-request', `The multipart body is malformed: ${err.message}.`);
    throw err;
  }
  if (!received) {
    throw new AppError('malformed-request', 'The upload has no `file` part.', { errors: [{ field: 'file', message: 'is required' }] });
  }
  return { ...received, fields, discard };
}

/** Counts bytes through, keeps the head for sniffing, and errors once past `max`. */
class ByteCounter extends Transform {
  bytes = 0;
  overflow = false;
  private readonly head: Buffer[] = [];
  private headLength = 0;

  constructor(private readonly max: number) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void): void {
    this.bytes += chunk.length;
    if (this.bytes > this.max) {
      this.overflow = true;
      done(new Error('file too large'));
      return;
    }
    if (this.headLength < SNIFF_HEAD_BYTES) {
      const take = chunk.subarray(0, SNIFF_HEAD_BYTES - this.headLength);
      this.head.push(Buffer.from(take));
      this.headLength += take.length;
    }
    done(null, chunk);
  }

  headBytes(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.head));
  }
}

/** A filename safe as the last part of an object key: `[A-Za-z0-9_.-]`, no leading dot, at most 100 characters. */
export function safeFilename(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const cleaned = base
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/\.{2,}/g, '.')
    .replace(/^[._]+/, '')
    .slice(-100);
  return cleaned || 'file';
}
