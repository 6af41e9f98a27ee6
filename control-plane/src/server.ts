import { createBus, stopOnSignals } from '@vap/shared';
import { ConfigError, loadConfig } from './config.js';
import { startControlPlane } from './control-plane.js';
import { createLogger } from './logger.js';
import { bootstrapBanner } from './modules/tenants/bootstrap-banner.js';

/** The control plane alone (for several-machine deployments); `bin/platform.ts` runs everything. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'control-plane');
  const bus = await createBus(config.natsUrl, { name: 'control-plane', subjectPrefix: config.natsSubjectPrefix, onHandlerError: (err, subject) => logger.error({ err, subject }, 'bus handler failed') });
  const cp = await startControlPlane(config, { bus, logger });
  logger.info({ url: cp.url, database: cp.databaseMode, bus: bus.kind }, 'control plane listening');
  // Generated credentials exist nowhere else: print them once, outside the JSON log.
  process.stdout.write(`${bootstrapBanner(cp.bootstrap, config.publicUrl).join('\n')}\n`);
  stopOnSignals(async () => {
    await cp.close();
    await bus.close();
  });
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
