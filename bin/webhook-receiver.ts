/**
 * Example webhook receiver (README "Receiving webhooks"):
 *
 *   pnpm webhook:receiver --secret "$WEBHOOK_SECRET" [--port 4000]
 *
 * Verifies every delivery's signature and timestamp, answers duplicates (the platform
 * retries after a failure or a slow answer) without processing them twice, and logs what
 * it processes. Settings come as flags, since only a service's config.ts reads the
 * environment; the shell expands `$WEBHOOK_SECRET`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { DeliveryDeduper, verifyWebhook } from '@vap/shared';
import type { PlatformEvent } from '@vap/shared';

// `pnpm webhook:receiver -- --secret …` hands the bare `--` through; parseArgs would stop there.
const args = process.argv.slice(2).filter((a) => a !== '--');
const { values } = parseArgs({ args, options: { secret: { type: 'string' }, port: { type: 'string', default: '4000' } } });
const port = Number(values.port);
if (!values.secret || !Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error('usage: pnpm webhook:receiver --secret <webhook secret> [--port 4000]');
  process.exit(2);
}
const secret = values.secret;

// --- core (shown in README "Receiving webhooks") ---
const deduper = new DeliveryDeduper(); // delivery ids seen in the last 24 h

/** Your work. Keep it under 5 s (or queue it): a slower answer counts as failed and is retried. */
async function processEvent(event: PlatformEvent): Promise<void> {
  console.log(`processed ${event.type} ${event.id}`);
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', async () => {
    // Verify the raw bytes: re-serialised JSON would not match the signature.
    const rawBody = Buffer.concat(chunks);
    const check = verifyWebhook(secret, req.headers, rawBody, { toleranceSeconds: 300 });
    if (!check.ok) {
      console.log(`rejected ${check.status}: ${check.reason}`);
      res.writeHead(check.status).end(check.reason); // 400 stale/malformed timestamp, 401 bad signature
      return;
    }
    let event: PlatformEvent;
    try {
      event = JSON.parse(rawBody.toString('utf8')) as PlatformEvent;
    } catch {
      res.writeHead(400).end('body is not JSON');
      return;
    }
    const deliveryId = check.deliveryId ?? event.id; // X-Webhook-Delivery-Id is the event id
    if (!deduper.firstTime(deliveryId)) {
      console.log(`duplicate ${event.type} ${deliveryId}: already processed`);
      res.writeHead(200).end('duplicate'); // a 2xx, so the platform stops retrying
      return;
    }
    try {
      await processEvent(event);
      res.writeHead(200).end('ok');
    } catch (err) {
      deduper.forget(deliveryId); // let the platform's retry through
      console.error(`failed ${event.type} ${deliveryId}:`, err);
      res.writeHead(500).end();
    }
  });
});
// --- end of core ---

server.listen(port, '127.0.0.1', () => console.log(`webhook receiver listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`));
