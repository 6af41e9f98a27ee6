import { z } from 'zod';
import { isId } from '@vap/shared';
import { pageQueryShape } from '../../http/pagination.js';

const STATUSES = ['pending', 'processing', 'indexed', 'failed'] as const;

export const documentIdParams = z.object({ documentId: z.string().min(1) });

export const uploadResultSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    filename: z.string(),
    status: z.enum(STATUSES),
    uploadedAt: z.string(),
  })
  .meta({ id: 'KnowledgeBaseUpload' });

export const documentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    filename: z.string(),
    mimeType: z.string(),
    sizeBytes: z.number().int(),
    status: z.enum(STATUSES),
    progress: z.number().int().describe('0..100 while processing, 100 once indexed'),
    chunkCount: z.number().int(),
    embeddingModel: z.string().nullable().describe('Model of the current vectors; null until first indexed'),
    assignedAgentIds: z.array(z.string()),
    uploadedAt: z.string(),
    indexedAt: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    error: z.string().nullable().describe('Why processing failed; null otherwise'),
  })
  .meta({ id: 'KnowledgeBaseDocument' });

export const statusSchema = z
  .object({
    id: z.string(),
    status: z.enum(STATUSES),
    progress: z.number().int(),
    chunkCount: z.number().int(),
    indexedAt: z.string().nullable(),
    error: z.string().nullable(),
  })
  .meta({ id: 'KnowledgeBaseDocumentStatus' });

export const listDocumentsQuery = z.object({
  ...pageQueryShape,
  sortBy: z.enum(['uploadedAt', 'name']).default('uploadedAt'),
  status: z.enum(STATUSES).optional(),
  agentId: z.string().min(1).optional().describe('Only documents assigned to this agent'),
  search: z.string().min(1).max(200).optional().describe('Part of the name (case-insensitive)'),
});
export type ListDocumentsQuery = z.output<typeof listDocumentsQuery>;

export const searchBody = z.object({
  query: z.string().trim().min(1, 'must not be empty').max(2000, 'must be at most 2000 characters'),
  documentIds: z
    .array(z.string().refine((v) => isId('kb', v), 'must be a knowledge-base document id (kb_…)'))
    .max(100, 'must have at most 100 items')
    .optional()
    .describe("Only these documents (each must be this account's); default all"),
  topK: z.number().int('must be an integer').min(1, 'must be from 1 to 50').max(50, 'must be from 1 to 50').default(5),
  minScore: z.number().min(0, 'must be from 0 to 1').max(1, 'must be from 0 to 1').default(0),
});
export type SearchBody = z.output<typeof searchBody>;

export const searchResultSchema = z
  .object({
    query: z.string(),
    matches: z.array(
      z.object({
        documentId: z.string(),
        documentName: z.string(),
        chunkId: z.string(),
        score: z.number().describe('0..1: 1 − (1 − cosine) × (1 − 0.8 × text share); see docs/knowledge-base.md'),
        excerpt: z.string(),
        pageNumber: z.number().int().nullable(),
        metadata: z.record(z.string(), z.string()),
      }),
    ),
    totalMatches: z.number().int(),
  })
  .meta({ id: 'KnowledgeBaseSearchResult' });
