import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { TextDecoder } from 'node:util';

/** Text encodings the knowledge base reads: UTF-8 by default, UTF-16 when a BOM says so. */
export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be';

/** The encoding a byte-order mark announces, and the mark's length; UTF-8 without a BOM. */
export function encodingFromBom(head: Uint8Array): { encoding: TextEncoding; bomBytes: number } {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: 'utf-8', bomBytes: 3 };
  if (head[0] === 0xff && head[1] === 0xfe) return { encoding: 'utf-16le', bomBytes: 2 };
  if (head[0] === 0xfe && head[1] === 0xff) return { encoding: 'utf-16be', bomBytes: 2 };
  return { encoding: 'utf-8', bomBytes: 0 };
}

/**
 * A whole text file as a string, decoded by its BOM (the BOM itself dropped). Invalid
 * sequences become U+FFFD rather than failing: the upload's head was already checked.
 */
export async function readTextFile(filePath: string): Promise<string> {
  const bytes = await readFile(filePath);
  const { encoding, bomBytes } = encodingFromBom(bytes);
  return new TextDecoder(encoding).decode(bytes.subarray(bomBytes));
}

/** A text file as decoded string chunks, for formats parsed as a stream (CSV). */
export async function* readTextChunks(filePath: string): AsyncGenerator<string> {
  let decoder: TextDecoder | null = null;
  for await (const chunk of createReadStream(filePath, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) {
    let bytes: Uint8Array = chunk;
    if (!decoder) {
      // The first chunk is 256 KB unless the file is smaller, so it holds the whole BOM.
      const { encoding, bomBytes } = encodingFromBom(bytes);
      decoder = new TextDecoder(encoding);
      bytes = bytes.subarray(bomBytes);
    }
    const text = decoder.decode(bytes, { stream: true });
    if (text) yield text;
  }
  const rest = decoder?.decode() ?? '';
  if (rest) yield rest;
}
