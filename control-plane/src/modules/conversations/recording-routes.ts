import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import { RECORDING_LINK_TTL_SECONDS } from './recording-links.js';
import type { RecordingFormat } from './recording-links.js';
import type { RecordingService } from './recording-service.js';
import { conversationIdParams } from './schemas.js';

export const recordingLinkSchema = z
  .object({
    url: z.string().describe(`Pre-signed link to the audio, valid ${RECORDING_LINK_TTL_SECONDS / 3600} hour; needs no credential`),
    format: z.enum(['mp3', 'wav']),
    durationSeconds: z.number().int().describe('Length of the recording, rounded to whole seconds'),
    expiresAt: z.string().describe('When the link stops working (ISO 8601); not when the recording is deleted'),
  })
  .meta({ id: 'RecordingLink' });

/** `GET /conversations/{id}/recording` (mounted under /api/v1). */
export const recordingRoutes: FastifyPluginAsync<{ service: RecordingService }> = async (app, { service }) => {
  app.withTypeProvider<ZodTypeProvider>().get('/conversations/:conversationId/recording', {
    config: { scope: 'conversations:read' },
    schema: {
      tags: ['Conversations'],
      summary: 'Get a pre-signed link to the recording (valid 1 hour); 404 recording-not-found when none is stored, 409 while in progress',
      params: conversationIdParams,
      response: { 200: recordingLinkSchema, ...problemResponses(401, 403, 404, 409, 429, 503) },
    },
    handler: async (req) => service.link(principalOf(req), req.params.conversationId),
  });
};

const fileParams = z.object({
  file: z.string().regex(/^[A-Za-z0-9_-]{1,128}\.(mp3|wav)$/, 'must be <conversationId>.mp3 or .wav'),
});
const linkQuery = z.object({
  expires: z.string().regex(/^\d{1,12}$/, 'must be a unix time in seconds'),
  sig: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be the link signature as issued'),
});

/** One `bytes=a-b` / `bytes=a-` / `bytes=-n` range within `size`, or null to send everything (RFC 9110 lets a server ignore Range). */
function singleRange(header: string | undefined, size: number): { start: number; end: number } | null {
  const m = header === undefined || size === 0 ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const start = m[1] === '' ? Math.max(0, size - Number(m[2])) : Number(m[1]);
  const end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  return start <= end && start < size ? { start, end } : null;
}

/**
 * `GET /recordings/{conversationId}.{ext}?expires&sig`: the local store's signed links.
 * Public (the signature is the credential), outside /api, not in OpenAPI. Streams the file
 * with its length; a single byte range is honoured (206) so players can seek.
 */
export const recordingFileRoutes: FastifyPluginAsync<{ service: RecordingService }> = async (app, { service }) => {
  app.withTypeProvider<ZodTypeProvider>().get('/recordings/:file', {
    config: { scope: null },
    schema: { hide: true, params: fileParams, querystring: linkQuery },
    handler: async (req, reply) => {
      const dot = req.params.file.lastIndexOf('.');
      const conversationId = req.params.file.slice(0, dot);
      const format = req.params.file.slice(dot + 1) as RecordingFormat;
      const rec = await service.openLinked(conversationId, format, Number(req.query.expires), req.query.sig);
      const range = singleRange(req.headers.range, rec.sizeBytes);
      reply.headers({
        'Content-Type': rec.contentType,
        'Accept-Ranges': 'bytes',
        'Cache-Control': `private, max-age=${rec.maxAgeSeconds}`,
        'Content-Disposition': `inline; filename="${conversationId}.${format}"`,
      });
      if (req.method === 'HEAD') {
        // Fastify would read the file to its end for HEAD, and answers length 0 for no payload;
        // an empty stream keeps the file's length.
        await rec.file.close();
        return reply.header('Content-Length', String(rec.sizeBytes)).send(Readable.from([]));
      }
      if (range) {
        reply.code(206).headers({ 'Content-Range': `bytes ${range.start}-${range.end}/${rec.sizeBytes}`, 'Content-Length': String(range.end - range.start + 1) });
        return reply.send(rec.file.createReadStream({ start: range.start, end: range.end }));
      }
      reply.header('Content-Length', String(rec.sizeBytes));
      return reply.send(rec.file.createReadStream());
    },
  });
};
