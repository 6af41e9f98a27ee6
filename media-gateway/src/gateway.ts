import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { SUBJECTS } from '@vap/shared';
import type { Bus, BusSubscription } from '@vap/shared';
import type { GatewayConfig } from './config.js';

/** A running media gateway. */
export interface MediaGateway {
  app: FastifyInstance;
  url: string;
  /** Agent ids whose cached configuration was dropped because the control plane changed them. */
  readonly invalidatedAgents: ReadonlySet<string>;
  close(): Promise<void>;
}

/**
 * The media gateway: today its health endpoint and its link to the control plane over
 * the bus. Carrier media streams (Twilio, Telnyx, Vonage), SIP and WebRTC arrive with
 * the voice-loop issue (#4).
 */
export async function startMediaGateway(config: GatewayConfig, deps: { bus: Bus; logger: Logger }): Promise<MediaGateway> {
  const app: FastifyInstance = Fastify({ loggerInstance: deps.logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });
  const invalidated = new Set<string>();
  const subs: BusSubscription[] = [
    deps.bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, ({ payload }) => {
      invalidated.add(payload.agentId);
      deps.logger.debug({ agentId: payload.agentId, change: payload.change }, 'agent configuration changed');
    }),
  ];
  app.get('/healthz', async () => ({ status: 'ok', bus: deps.bus.kind, activeCalls: 0 }));
  const url = await app.listen({ host: config.host, port: config.port });
  return {
    app,
    url,
    invalidatedAgents: invalidated,
    close: async () => {
      await Promise.all(subs.map((s) => s.close()));
      await app.close();
    },
  };
}
