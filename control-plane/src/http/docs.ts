import type { FastifyInstance } from 'fastify';
import { ERROR_CATALOGUE } from '@vap/shared';
import type { ErrorSlug } from '@vap/shared';

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}code{background:#f2f2f2;padding:0 .2em}</style>
</head><body>${body}</body></html>`;
}

/**
 * Human pages: `/docs/errors` and `/docs/errors/<slug>` (what a problem `type` points at),
 * rendered from the one error catalogue so they cannot drift from what the API sends.
 */
export function registerErrorDocs(app: FastifyInstance): void {
  app.get('/docs/errors', { schema: { hide: true } }, async (_req, reply) => {
    const items = Object.entries(ERROR_CATALOGUE)
      .map(([slug, e]) => `<li><a href="errors/${slug}"><code>${slug}</code></a> (${e.status}): ${escape(e.title)}</li>`)
      .join('');
    return reply.type('text/html').send(page('Error types', `<h1>Error types</h1><p>Every error is <code>application/problem+json</code> (RFC 7807).</p><ul>${items}</ul>`));
  });

  app.get<{ Params: { slug: string } }>('/docs/errors/:slug', { schema: { hide: true } }, async (req, reply) => {
    const entry = ERROR_CATALOGUE[req.params.slug as ErrorSlug] as (typeof ERROR_CATALOGUE)[ErrorSlug] | undefined;
    if (!entry) return reply.code(404).type('text/html').send(page('Unknown error type', '<h1>Unknown error type</h1>'));
    return reply
      .type('text/html')
      .send(page(entry.title, `<h1>${escape(entry.title)}</h1><p>Status <b>${entry.status}</b>, type slug <code>${escape(req.params.slug)}</code>.</p><p>${escape(entry.description)}</p><p><a href="../errors">All error types</a></p>`));
  });
}
