/**
 * Types shared by the knowledge base's layers: parsing → chunking → embedding → index.
 * Each layer lives in its own folder beside this file.
 */

/** The nine supported formats (spec "Knowledge base"), detected from content and declared type. */
export const KB_DOCUMENT_TYPES = ['pdf', 'docx', 'xlsx', 'csv', 'markdown', 'html', 'json', 'xml', 'text'] as const;
export type KbDocumentType = (typeof KB_DOCUMENT_TYPES)[number];

/** A piece of a parsed document in reading order, before chunking. */
export interface ParsedSection {
  text: string;
  /** 1-based PDF page the text is on; null for formats without pages. */
  pageNumber: number | null;
  /**
   * Where the text sits, kept with every chunk made from it so a passage is understandable
   * on its own: e.g. `Sheet "Prices", rows 2-40` (XLSX), `Opening hours > Weekends` (heading
   * path in Markdown/HTML/DOCX), `$.menu.items[3]` (JSON). Null when there is nothing useful.
   */
  context: string | null;
}

export interface ParsedDocument {
  type: KbDocumentType;
  sections: ParsedSection[];
  /** Pages (PDF) or sheets (XLSX) seen; null for other formats. */
  pageCount: number | null;
}

/** Why a document could not be parsed; `message` is shown to users as the document's `error`. */
export type KbParseErrorCode = 'corrupt' | 'encrypted' | 'empty' | 'too_complex' | 'timeout';

export class KbParseError extends Error {
  constructor(
    readonly code: KbParseErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'KbParseError';
  }
}

/** One chunk ready to embed and index. */
export interface KbChunk {
  /** 0-based order within the document. */
  position: number;
  text: string;
  tokenCount: number;
  pageNumber: number | null;
  context: string | null;
}

/** Turns text into vectors. One model per embedder; vectors of two models are never compared. */
export interface Embedder {
  /** Recorded on the document as `embeddingModel`, and on each chunk; search only compares vectors of one model. */
  readonly model: string;
  readonly dimensions: number;
  /** Vectors in input order, L2-normalised. `kind` lets asymmetric models prefix queries. */
  embed(texts: string[], kind: 'document' | 'query'): Promise<Float32Array[]>;
}
