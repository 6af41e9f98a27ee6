import { createBus, quietOnHangup, stopOnSignals } from '@vap/shared';
import { pino } from 'pino';
import { loadGatewayConfig } from './config.js';
import { startMediaGateway } from './gateway.js';

/** The media gateway alone (several-machine deployments; needs NATS_URL to reach a control plane). */
async function main(): Promise<void> {
  const config = loadGatewayConfig();
  const logger = pino({ name: 'media-gateway', level: config.logLevel }, quietOnHangup(pino.destination({ dest: 1 })));
  const bus = await createBus(config.natsUrl, { name: 'media-gateway', subjectPrefix: config.natsSubjectPrefix, onHandlerError: (err, subject) => logger.error({ err, subject }, 'bus handler failed') });
  const gw = await startMediaGateway(config, { bus, logger });
  logger.info({ url: gw.url, bus: bus.kind }, 'media gateway listening');
  // A rolling restart does not cut calls: they may go on for GATEWAY_DRAIN_TIMEOUT_MS first (a second signal ends them now).
  stopOnSignals(async (hurry) => {
    await gw.drain({ hurry });
    await gw.close();
    await bus.close();
  });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
