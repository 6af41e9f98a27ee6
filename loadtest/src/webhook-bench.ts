/**
 * `pnpm bench:webhooks [-- --events <n>] [--webhooks <n>]`: stages a burst of `SessionEnded`
 * events through the real transactional outbox, lets the control plane's dispatcher deliver
 * them from the Postgres queue to a verifying receiver on loopback, and in the same run
 * sends as many signed POSTs straight to that receiver with the same concurrency and no
 * queue. The tracked figure is platform deliveries/s ÷ baseline deliveries/s: what the
 * durable queue (claim, sign, record) costs, largely independent of the machine's speed.
 * Loopback only; everything started here is stopped, and the bench database dropped.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { newId } from '@vap/shared';
import type { PlatformEvent } from '@vap/shared';
// The outbox and the database handle are not part of the control plane's public API; the
// benchmark uses them as the call service does, so what it measures is the real write path.
import { openDatabase } from '../../control-plane/src/db/database.js';
import type { Database } from '../../control-plane/src/db/database.js';
import { EventOutbox } from '../../control-plane/src/modules/webhooks/event-outbox.js';
import { startBenchPlatform } from './bench-platform.js';
import type { BenchPlatform } from './bench-platform.js';
import { startBenchReceiver } from './bench-receiver.js';
import type { BenchReceiver } from './bench-receiver.js';
import { loadWebhookBenchConfig, loadOrExit } from './config.js';
import type { WebhookBenchConfig } from './config.js';
import { sendDirect } from './direct-sender.js';
import type { DirectDelivery } from './direct-sender.js';
import { machineInfo } from './machine-info.js';
import { reportFileName } from './report.js';
import { buildWebhookReport, formatWebhookTable, ratePerSec, summariseDelays } from './webhook-report.js';
import type { DeliveryPhaseFigures } from './webhook-report.js';
import { runBounded } from './run-bounded.js';

const AGENT_BODY = {
  name: 'Webhook bench agent',
  persona: { name: 'Ava' },
  voice: { provider: 'elevenlabs', voiceId: 'v1' },
  llm: { provider: 'openai', model: 'gpt-4o-mini' },
  transcription: { provider: 'deepgram' },
  systemPromptTemplate: 'You help.',
};

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));
/** Events per phase of the discarded warm-up (connections, JIT, prepared plans). */
const WARMUP_EVENTS = 10;
/** Transactions staging events at once, like a few control planes ending calls together. */
const STAGING_CONNECTIONS = 4;
/** The dispatcher's per-attempt deadline (spec "Events"), used for the baseline's requests too. */
const REQUEST_TIMEOUT_MS = 5000;
/** Start-up (embedded Postgres included) and shut-down allowance on top of the phases. */
const OVERHEAD_MS = 180_000;

/** How long a phase of `deliveries` may take to arrive: generous, but bounded. */
function deliveryTimeoutMs(deliveries: number): number {
  return 30_000 + 20 * deliveries;
}

interface Started {
  receiver?: BenchReceiver;
  platform?: BenchPlatform;
  database?: Database;
}

interface World {
  config: WebhookBenchConfig;
  platform: BenchPlatform;
  receiver: BenchReceiver;
  database: Database;
  outbox: EventOutbox;
  agentId: string;
  /** Receiver paths with their secrets, one per webhook. */
  hooks: Array<{ path: string; secret: string }>;
}

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

async function api(platform: BenchPlatform, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 201) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** A `SessionEnded` envelope (spec "Events") with a fresh event id. */
function sessionEnded(w: Pick<World, 'agentId' | 'platform'>): PlatformEvent {
  const nowMs = Date.now();
  return {
    id: newId('evt', nowMs),
    type: 'SessionEnded',
    agentId: w.agentId,
    tenantId: w.platform.tenantId,
    timestamp: new Date(nowMs).toISOString(),
    data: {
      conversationId: newId('conv', nowMs),
      channel: 'phone',
      direction: 'inbound',
      durationSeconds: 42,
      endReason: 'user_ended',
      caller: { phoneNumber: '+15005550006', country: 'US' },
      cost: { totalUsd: 0.0421, llmUsd: 0.01, ttsUsd: 0.02, sttUsd: 0.0071, telephonyUsd: 0.005 },
      metadata: { bench: true },
    },
  };
}

/** The largest of `values`, without spreading them into arguments (a phase may hold 32 000). */
function maxOf(values: Iterable<number>): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  return max;
}

function minOf(values: Iterable<number>): number {
  return -maxOf(Array.from(values, (v) => -v));
}

/**
 * Stages `count` events, each in its own transaction through `EventOutbox.stage`, and waits
 * for every delivery. The dispatcher is woken only by the commit's NOTIFY: this outbox has
 * no local listener, as if another control plane had staged the events.
 */
async function platformPhase(w: World, count: number): Promise<{ figures: DeliveryPhaseFigures; stagingMs: number }> {
  const events = Array.from({ length: count }, () => sessionEnded(w));
  const expected = count * w.hooks.length;
  const committedAtMs = new Map<string, number>();
  let staged = 0;
  let next = 0;
  const stagingStartMs = performance.now();
  const stager = async () => {
    while (next < events.length) {
      const event = events[next++]!;
      const created = await w.database.db.transaction((tx) => w.outbox.stage(tx, event));
      committedAtMs.set(event.id, performance.now());
      // Added after the await: `staged += await …` would add to a value read before it.
      staged += created;
    }
  };
  await Promise.all(Array.from({ length: Math.min(STAGING_CONNECTIONS, count) }, stager));
  const stagingMs = performance.now() - stagingStartMs;
  if (staged !== expected) throw new Error(`staging created ${staged} deliveries, expected ${expected}: are the webhooks subscribed and enabled?`);

  await w.receiver.waitFor(expected, deliveryTimeoutMs(expected));
  const delays: number[] = [];
  for (const [key, arrivedMs] of w.receiver.arrivals) {
    const committedMs = committedAtMs.get(key.slice(key.indexOf(' ') + 1));
    if (committedMs !== undefined) delays.push(arrivedMs - committedMs);
  }
  const firstCommitMs = minOf(committedAtMs.values());
  const lastArrivalMs = maxOf(w.receiver.arrivals.values());
  return {
    stagingMs,
    figures: {
      phase: 'platform',
      expected,
      delivered: w.receiver.arrivals.size,
      durationMs: lastArrivalMs - firstCommitMs,
      deliveriesPerSec: ratePerSec(w.receiver.arrivals.size, firstCommitMs, lastArrivalMs),
      delay: summariseDelays(delays),
      verifyFailures: w.receiver.verifyFailures,
      duplicates: w.receiver.duplicates,
      sendErrors: 0,
    },
  };
}

/** The same deliveries for `count` new events, POSTed straight to the receiver. */
async function baselinePhase(w: World, count: number): Promise<DeliveryPhaseFigures> {
  const deliveries: DirectDelivery[] = [];
  for (let i = 0; i < count; i++) {
    const event = sessionEnded(w);
    const body = JSON.stringify(event);
    for (const hook of w.hooks) deliveries.push({ origin: w.receiver.url, path: hook.path, secret: hook.secret, deliveryId: event.id, body });
  }
  const sent = await sendDirect(deliveries, w.config.concurrency, REQUEST_TIMEOUT_MS);
  const delays: number[] = [];
  for (const [key, arrivedMs] of w.receiver.arrivals) {
    const sentMs = sent.sentAtMs.get(key);
    if (sentMs !== undefined) delays.push(arrivedMs - sentMs);
  }
  const lastArrivalMs = maxOf(w.receiver.arrivals.values());
  return {
    phase: 'baseline',
    expected: deliveries.length,
    delivered: w.receiver.arrivals.size,
    durationMs: lastArrivalMs - sent.startedMs,
    deliveriesPerSec: ratePerSec(w.receiver.arrivals.size, sent.startedMs, lastArrivalMs),
    delay: summariseDelays(delays),
    verifyFailures: w.receiver.verifyFailures,
    duplicates: w.receiver.duplicates,
    sendErrors: sent.errors,
  };
}

async function setUp(config: WebhookBenchConfig, started: Started): Promise<World> {
  const receiver = (started.receiver = await startBenchReceiver());
  progress(`starting the control plane (${config.serverDatabaseUrl ? 'new database on DATABASE_URL' : 'embedded Postgres'})`);
  // Development: http://127.0.0.1 webhook URLs are accepted and the outbound allowlist is loopback.
  const platform = (started.platform = await startBenchPlatform(config.serverDatabaseUrl, { APP_ENV: 'development', WEBHOOK_CONCURRENCY: String(config.concurrency) }));
  const agent = await api(platform, '/api/v1/agents', AGENT_BODY);
  const agentId = String(agent.id);
  const hooks: World['hooks'] = [];
  for (let i = 0; i < config.webhooks; i++) {
    const path = `/hook/${i}`;
    const created = await api(platform, '/api/v1/webhooks', { agentId, url: `${receiver.url}${path}`, events: ['SessionEnded'], enabled: true });
    if (typeof created.secret !== 'string') throw new Error('creating a webhook returned no secret');
    receiver.route(path, created.secret);
    hooks.push({ path, secret: created.secret });
  }
  const database = (started.database = openDatabase(platform.databaseUrl, STAGING_CONNECTIONS));
  return { config, platform, receiver, database, outbox: new EventOutbox(), agentId, hooks };
}

async function bench(config: WebhookBenchConfig, started: Started): Promise<number> {
  const startedAt = new Date();
  const w = await setUp(config, started);
  const total = config.events * config.webhooks;

  progress(`warm-up: ${WARMUP_EVENTS} events through the platform and directly`);
  await platformPhase(w, WARMUP_EVENTS);
  w.receiver.reset();
  await baselinePhase(w, WARMUP_EVENTS);
  w.receiver.reset();

  progress(`platform: staging ${config.events} events for ${config.webhooks} webhooks (${total} deliveries)`);
  const { figures: platform, stagingMs } = await platformPhase(w, config.events);
  w.receiver.reset();
  progress(`baseline: ${total} signed POSTs, ${config.concurrency} connections`);
  const baseline = await baselinePhase(w, config.events);

  const perWebhook = w.platform.config.webhooks.perWebhook;
  const report = buildWebhookReport({
    startedAt,
    settings: { events: config.events, webhooks: config.webhooks, concurrency: config.concurrency, perWebhook, database: w.platform.databaseMode },
    machine: machineInfo(),
    stagingMs,
    platform,
    baseline,
  });
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}${reportFileName(startedAt, 'webhook-bench')}`;
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

  const m = report.machine;
  const cap = Math.min(config.concurrency, perWebhook * config.webhooks);
  process.stdout.write(
    [
      '',
      `Webhook benchmark: ${config.events} SessionEnded events x ${config.webhooks} webhooks = ${total} deliveries, ${platform.durationMs.toFixed(0)} ms; staged in ${stagingMs.toFixed(0)} ms over ${STAGING_CONNECTIONS} connections; ${w.platform.databaseMode} Postgres; ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}`,
      `dispatcher: WEBHOOK_CONCURRENCY ${config.concurrency}, at most ${perWebhook} per webhook (so at most ${cap} in flight); baseline: ${config.concurrency} keep-alive connections`,
      '',
      formatWebhookTable(report),
      '',
      `ratio is platform / baseline deliveries/s; results written to ${file}`,
      ...report.failures.map((f) => `FAIL ${f}`),
      '',
    ].join('\n'),
  );
  return report.ok ? 0 : 1;
}

async function main(): Promise<void> {
  const config = loadOrExit(loadWebhookBenchConfig);
  const started: Started = {};
  const shutDown = async () => {
    await started.database?.close().catch(() => undefined);
    // The platform first: its dispatcher may still be sending to the receiver.
    await started.platform?.close();
    await started.receiver?.close().catch(() => undefined);
  };

  const total = config.events * config.webhooks;
  const budgetMs = 2 * deliveryTimeoutMs(total) + 2 * deliveryTimeoutMs(WARMUP_EVENTS * config.webhooks) + OVERHEAD_MS;
  await runBounded({ budgetMs, run: () => bench(config, started), shutDown });
}

void main();
