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
  const bus = await createBus(config.natsUrl, { name: 'platform', subjectPrefix: config.natsSubjectPrefix, onHandlerError: (err, subject) => logger.error({ err, subject }, 'bus handler failed') });
  const cp = await startControlPlane(config, { bus, logger: logger.child({ service: 'control-plane' }) });
  // The same Twilio token on both sides: the gateway checks stream upgrades with what the webhook checked
  // (TWILIO_AUTH_TOKEN, or in sandbox mode the generated token in DATA_DIR/twilio-sandbox-token).
  // Likewise the Vonage signature secret for WebSocket upgrades (development sandbox: DATA_DIR/vonage-sandbox-signature-secret).
  const gw = await startMediaGateway({ ...gatewayConfig, twilioAuthToken: cp.twilio.token, vonageSignatureSecret: cp.vonage.secret }, { bus, logger: logger.child({ service: 'media-gateway' }) });

  const lines = [
    '',
    'Voice Agent Platform is running',
    `  API            ${config.publicUrl}/api/v1`,
    `  API docs       ${config.publicUrl}/docs/api   (OpenAPI: ${config.publicUrl}/api/v1/openapi.json)`,
    `  Media gateway  ${gw.url}   (public: ${config.mediaGatewayPublicUrl})`,
    `  Twilio         voice webhook ${config.publicUrl}/webhooks/twilio/voice; ${cp.twilio.sandbox ? `sandbox mode, signatures use the token in ${cp.twilio.file}` : 'signatures checked with TWILIO_AUTH_TOKEN'}`,
    cp.admin
      ? `  Admin API      ${cp.admin.url}/api/v1/telephony/debug   (Bearer token: ${cp.admin.tokenSource === 'ADMIN_TOKEN' ? 'ADMIN_TOKEN' : `in ${cp.admin.tokenSource}`})`
      : '  Admin API      not started: set ADMIN_TOKEN to enable it in production',
    `  Database       ${cp.databaseMode === 'embedded' ? `embedded Postgres in ${config.dataDir}/postgres` : 'DATABASE_URL'}`,
    `  Bus            ${bus.kind === 'nats' ? 'NATS (NATS_URL)' : 'in-process'}`,
    // The real mode of each provider: live with its *_API_KEY, else the sandbox simulator.
    ...gw.providers.describe().map((line, i) => `${i === 0 ? '  Providers      ' : '                 '}${line}`),
    '  Try a call     npx --yes pnpm@10.34.9 call   (in another terminal, same environment)',
  ];
  lines.push('', ...bootstrapBanner(cp.bootstrap, config.publicUrl));
  process.stdout.write(`${lines.join('\n')}\n\n`);

  // The gateway drains first (its calls may go on for GATEWAY_DRAIN_TIMEOUT_MS; a second Ctrl-C
  // ends them now) while the control plane still stores what they send.
  stopOnSignals(async (hurry) => {
    await gw.drain({ hurry });
    await gw.close();
    await cp.close();
    await bus.close();
  });
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
