import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { SUBJECTS } from '@vap/shared';
import type { Bus, BusSubscription } from '@vap/shared';
import type { CallLeg } from './call-leg.js';
import type { GatewayConfig } from './config.js';
import { attachTwilioMediaStreams } from './twilio/media-stream-server.js';
import { OutboundPacer } from './twilio/pacer.js';

/** A running media gateway. */
export interface MediaGateway {
  app: FastifyInstance;
  url: string;
  /** Agent ids whose cached configuration was dropped because the control plane changed them. */
  readonly invalidatedAgents: ReadonlySet<string>;
  close(): Promise<void>;
}

/**
 * The media gateway: its health endpoint, its link to the control plane over the bus, and
 * Twilio media streams on the same port (`twilio/media-stream-server.ts`), paced by one
 * shared timer. Telnyx, Vonage, SIP and WebRTC arrive with the voice-loop issue (#4).
 */
export async function startMediaGateway(
  config: GatewayConfig,
  deps: {
    bus: Bus;
    logger: Logger;
    /** A carrier leg connected (Twilio stream after `start`); the callee owns it. Default: log and hang up. */
    onCall?: (leg: CallLeg) => void;
  },
): Promise<MediaGateway> {
  const app: FastifyInstance = Fastify({ loggerInstance: deps.logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });
  const invalidated = new Set<string>();
  const subs: BusSubscription[] = [
    deps.bus.subscribe('agentChanged', SUBJECTS.agentChanged.wildcard, ({ payload }) => {
      invalidated.add(payload.agentId);
      deps.logger.debug({ agentId: payload.agentId, change: payload.change }, 'agent configuration changed');
    }),
  ];
  const pacer = new OutboundPacer({ onSinkError: (err) => deps.logger.warn({ err }, 'outbound frame not sent') });
  const onCall =
    deps.onCall ??
    ((leg: CallLeg) => {
      deps.logger.warn({ callSid: leg.callSid, provider: leg.provider }, 'no call handler: hanging up');
      void leg.hangup();
    });
  const twilio = attachTwilioMediaStreams(app.server, { publicUrl: config.publicUrl, authToken: config.twilioAuthToken, logger: deps.logger, pacer, onCall });
  app.get('/healthz', async () => ({ status: 'ok', bus: deps.bus.kind, activeCalls: twilio.activeLegs }));
  const url = await app.listen({ host: config.host, port: config.port });
  return {
    app,
    url,
    invalidatedAgents: invalidated,
    close: async () => {
      await Promise.all(subs.map((s) => s.close()));
      await twilio.close();
      pacer.stop();
      await app.close();
    },
  };
}
