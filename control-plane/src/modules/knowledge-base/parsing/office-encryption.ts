import { open } from 'node:fs/promises';
import { KbParseError } from '../types.js';

const CFB_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

/**
 * The error for an Office file that is not a ZIP. A password-protected DOCX or XLSX is
 * stored as an OLE compound file (MS-OFFCRYPTO: the ZIP is encrypted inside it), as are
 * legacy .doc/.xls files; anything else is `corrupt`.
 */
export async function officeReadError(filePath: string, format: 'DOCX' | 'XLSX', cause: unknown): Promise<KbParseError> {
  let head = new Uint8Array(0);
  try {
    const file = await open(filePath, 'r');
    try {
      head = new Uint8Array(8);
      const { bytesRead } = await file.read(head, 0, 8, 0);
      head = head.subarray(0, bytesRead);
    } finally {
      await file.close();
    }
  } catch {
    // Unreadable: reported as corrupt below.
  }
  const err = CFB_MAGIC.every((b, i) => head[i] === b)
    ? new KbParseError('encrypted', `The ${format} file is password-protected (or in the legacy ${format === 'DOCX' ? '.doc' : '.xls'} format). Save it without a password as ${format === 'DOCX' ? '.docx' : '.xlsx'}.`)
    : new KbParseError('corrupt', `The ${format} file is damaged or truncated and could not be read.`);
  (err as { cause?: unknown }).cause = cause;
  return err;
}
