/**
 * Everything in one process on the one-machine defaults: control plane, media gateway
 * and background jobs, sharing one bus (in-process unless NATS_URL is set). This is what
 * `pnpm start` runs. The two services never import each other; only this launcher
 * knows both.
 */
import { ConfigError, bootstrapBanner, createLogger, loadConfig, startControlPlane } from '@vap/control-plane';
import { loadGatewayConfig, startMediaGateway } from '@vap/media-gateway';
import { createBus, stopOnSignals } from '@vap/shared';

async function main(): Promise<void> {
  const config = loadConfig();
  const gatewayConfig = loadGatewayConfig();
  const logger = createLogger(config.logLevel, 'platform');
  const bus = await createBus(config.natsUrl, { name: 'platform', onHandlerError: (err, subject) => logger.error({ err, subject }, 'bus handler failed') });
  const cp = await startControlPlane(config, { bus, logger: logger.child({ service: 'control-plane' }) });
  const gw = await startMediaGateway(gatewayConfig, { bus, logger: logger.child({ service: 'media-gateway' }) });

  const lines = [
    '',
    'Voice Agent Platform is running',
    `  API            ${config.publicUrl}/api/v1`,
    `  API docs       ${config.publicUrl}/docs/api   (OpenAPI: ${config.publicUrl}/api/v1/openapi.json)`,
    `  Media gateway  ${gw.url}`,
    `  Database       ${cp.databaseMode === 'embedded' ? `embedded Postgres in ${config.dataDir}/postgres` : 'DATABASE_URL'}`,
    `  Bus            ${bus.kind === 'nats' ? 'NATS (NATS_URL)' : 'in-process'}`,
    '  Providers      simulated (sandbox): no provider keys are configured yet',
  ];
  lines.push('', ...bootstrapBanner(cp.bootstrap, config.publicUrl));
  process.stdout.write(`${lines.join('\n')}\n\n`);

  stopOnSignals(async () => {
    await gw.close();
    await cp.close();
    await bus.close();
  });
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
