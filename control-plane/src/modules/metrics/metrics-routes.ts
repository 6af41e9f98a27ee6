import type { FastifyInstance } from 'fastify';
import { AppError, PROMETHEUS_CONTENT_TYPE, metricsExposition, metricsRequestAllowed } from '@vap/shared';
import type { ControlPlaneMetrics } from './control-plane-metrics.js';

/**
 * `GET /metrics` (Prometheus text: the process metrics and `metrics`), outside `/api` like
 * `/healthz`: public unless a token is configured, then `Authorization: Bearer <token>`.
 * Also times every request by its route pattern. Registered on the root instance (not as
 * an encapsulated plugin) so the hook sees every route.
 */
export function registerMetrics(app: FastifyInstance, opts: { metrics: ControlPlaneMetrics; token: string | undefined }): void {
  app.addHook('onResponse', async (req, reply) => {
    // The pattern, not the URL: ids in paths would make a series per resource.
    opts.metrics.httpRequest(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime);
  });
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (!metricsRequestAllowed(req.headers.authorization, opts.token)) {
      throw new AppError('unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.', { headers: { 'WWW-Authenticate': 'Bearer' } });
    }
    return reply.type(PROMETHEUS_CONTENT_TYPE).send(await metricsExposition(opts.metrics.registry));
  });
}
