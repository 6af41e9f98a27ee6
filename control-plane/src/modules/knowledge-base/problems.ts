import { AppError } from '@vap/shared';

/** Problems of the knowledge-base API (RFC 7807 through AppError). */
export function documentNotFound(id: string): AppError {
  return new AppError('not-found', `Knowledge-base document ${id} was not found.`);
}

/** A 422 naming one field of the upload or the body. */
export function invalidField(field: string, message: string): AppError {
  return new AppError('validation', `${field}: ${message}`, { errors: [{ field, message }] });
}

export function fileTooLarge(maxBytes: number): AppError {
  return new AppError('payload-too-large', `The file is larger than ${maxBytes / (1024 * 1024)} MB, the limit for knowledge-base documents.`, {
    errors: [{ field: 'file', message: `must be at most ${maxBytes} bytes` }],
    // The rest of the body is not read: the connection closes after this answer.
    headers: { connection: 'close' },
  });
}

export function unsupportedFile(reason: string): AppError {
  return new AppError('unsupported-media-type', `file: ${reason}. Supported: PDF, DOCX, XLSX, CSV, Markdown, HTML, JSON, XML, plain text.`, {
    errors: [{ field: 'file', message: reason }],
  });
}

export function alreadyProcessing(id: string): AppError {
  return new AppError('invalid-state', `Document ${id} is already being processed; reindex it after it is indexed or failed (GET …/status).`);
}
