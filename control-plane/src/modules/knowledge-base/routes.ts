import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pageSchema } from '../../http/pagination.js';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import { documentIdParams, documentSchema, listDocumentsQuery, searchBody, searchResultSchema, statusSchema, uploadResultSchema } from './schemas.js';
import type { KnowledgeBaseService } from './service.js';
import { KB_MAX_FILE_BYTES, receiveUpload } from './upload.js';

const tags = ['Knowledge base'];

const uploadParts = z.object({
  file: z.string().meta({ format: 'binary' }).describe('The document, at most 50 MB'),
  name: z.string().optional().describe('Default: the filename'),
  agentIds: z.string().optional().describe('Comma-separated agent ids to assign the document to'),
  metadata: z.string().optional().describe('A JSON object of string values, e.g. {"department":"sales"}'),
});
// The spec has no knowledge-base scope: documents are part of agent configuration.
const READ = { scope: 'agents:read' } as const;
const WRITE = { scope: 'agents:write' } as const;
// Idempotency-Key: the upload's file is not part of the request hash (it is streamed after the
// check), so a repeat with the same key answers the first upload whatever it carries.
const UPLOAD = { scope: 'agents:write', idempotent: true } as const;
const ACTION = { scope: 'agents:write', idempotent: true } as const;
const SEARCH = { scope: 'agents:read', idempotent: true } as const;

/** The Knowledge base section: documents (multipart upload), their indexing state, and search. */
export const knowledgeBaseRoutes: FastifyPluginAsync<{ service: KnowledgeBaseService; tempDir: string }> = async (app, { service, tempDir }) => {
  // Multipart is accepted in this plugin only; the rest of the API stays JSON-only.
  await app.register(fastifyMultipart, { limits: { fileSize: KB_MAX_FILE_BYTES + 1, files: 1 } });
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/knowledge-base/documents', {
    config: UPLOAD,
    schema: {
      tags,
      summary: 'Upload a document (multipart/form-data: file, name, agentIds, metadata); 202 while it is indexed',
      description:
        'Parts: `file` (required, at most 50 MB; PDF, DOCX, XLSX, CSV, Markdown, HTML, JSON, XML or plain text, recognised by content), `name` (default the filename), `agentIds` (comma-separated agent ids to assign), `metadata` (a JSON object of string values, copied to every chunk and search match). Fields may come before or after the file. 413 past 50 MB; 415 for content of an unsupported type; 422 when the filename or declared type names a supported type that the content is not (a `.pdf` that is not a PDF), or for a bad `agentIds` or `metadata`. Indexing runs in the background: follow `GET …/documents/{id}/status`.',
      consumes: ['multipart/form-data'],
      // For the OpenAPI document only: the parts are read and checked by the handler as they stream.
      body: uploadParts,
      response: { 202: uploadResultSchema, ...problemResponses(400, 401, 403, 413, 415, 422, 429) },
    },
    validatorCompiler: () => () => true,
    handler: async (req, reply) => {
      const p = principalOf(req);
      let upload;
      try {
        upload = await receiveUpload(req, tempDir);
      } catch (err) {
        // Refused before the body was read to its end: close the connection instead of reading the rest.
        if (!req.raw.complete) reply.header('connection', 'close');
        throw err;
      }
      return reply.code(202).send(await service.upload(p, upload));
    },
  });

  r.get('/knowledge-base/documents', {
    config: READ,
    schema: { tags, summary: 'List documents', querystring: listDocumentsQuery, response: { 200: pageSchema(documentSchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.get('/knowledge-base/documents/:documentId', {
    config: READ,
    schema: { tags, summary: 'Get a document', params: documentIdParams, response: { 200: documentSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.documentId),
  });

  r.get('/knowledge-base/documents/:documentId/status', {
    config: READ,
    schema: { tags, summary: 'Get the indexing status and progress of a document', params: documentIdParams, response: { 200: statusSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.status(principalOf(req), req.params.documentId),
  });

  r.post('/knowledge-base/documents/:documentId/reindex', {
    config: ACTION,
    schema: {
      tags,
      summary: 'Re-chunk and re-embed a document (back to processing); 409 while it is processing',
      params: documentIdParams,
      response: { 202: statusSchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req, reply) => reply.code(202).send(await service.reindex(principalOf(req), req.params.documentId)),
  });

  r.delete('/knowledge-base/documents/:documentId', {
    config: WRITE,
    schema: {
      tags,
      summary: 'Delete a document with its chunks, embeddings, agent assignments and stored file',
      params: documentIdParams,
      response: { 204: z.null().describe('Deleted'), ...problemResponses(401, 403, 404, 429) },
    },
    handler: async (req, reply) => {
      await service.delete(principalOf(req), req.params.documentId);
      return reply.code(204).send(null);
    },
  });

  r.post('/knowledge-base/search', {
    config: SEARCH,
    schema: {
      tags,
      summary: 'Hybrid (vector + full-text) search over indexed documents',
      body: searchBody,
      response: { 200: searchResultSchema, ...problemResponses(400, 401, 403, 422, 429, 503) },
    },
    handler: async (req) => service.search(principalOf(req), req.body),
  });
};
