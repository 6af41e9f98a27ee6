/**
 * `pnpm bench:api [-- --duration <s>] [--connections <n>]`: drives the control plane's
 * `GET /api/v1/agents/{id}` and `POST /api/v1/agents` with autocannon and measures a bare
 * Fastify route in the same run. The tracked figure is platform req/s ÷ bare req/s: it
 * says what auth, rate limiting, validation and Postgres cost, largely independent of how
 * fast the machine is. Loopback only; everything started here is stopped at the end.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startBareServer } from './bare-server.js';
import type { BareServer } from './bare-server.js';
import { startBenchPlatform } from './bench-platform.js';
import type { BenchPlatform } from './bench-platform.js';
import { loadBenchConfig, loadOrExit } from './config.js';
import type { BenchConfig } from './config.js';
import { runLoad } from './load-generator.js';
import type { LoadSpec } from './load-generator.js';
import { machineInfo } from './machine-info.js';
import { buildReport, compare, figuresFrom, formatTable, reportFileName } from './report.js';
import type { Comparison, ScenarioFigures } from './report.js';
import { runBounded } from './run-bounded.js';

const AGENT_BODY = {
  name: 'Bench agent',
  persona: { name: 'Ava' },
  voice: { provider: 'elevenlabs', voiceId: 'v1' },
  llm: { provider: 'openai', model: 'gpt-4o-mini' },
  transcription: { provider: 'deepgram' },
  systemPromptTemplate: 'You help.',
};

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

/** Start-up (embedded Postgres included) and shut-down allowance on top of the load runs. */
const OVERHEAD_MS = 180_000;

type Target = Omit<LoadSpec, 'durationSec' | 'connections'>;

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

async function measure(config: BenchConfig, scenario: string, kind: ScenarioFigures['target'], target: Target): Promise<ScenarioFigures> {
  const tag = (phase: string) => (target.uniqueNamePrefix ? { uniqueNamePrefix: `${target.uniqueNamePrefix} ${phase}` } : {});
  progress(`${scenario} (${kind}): warm-up ${config.warmupSec} s`);
  await runLoad({ ...target, ...tag('warm-up'), durationSec: config.warmupSec, connections: config.connections });
  progress(`${scenario} (${kind}): measuring ${config.durationSec} s, ${config.connections} connections`);
  const { result, latency } = await runLoad({ ...target, ...tag('run'), durationSec: config.durationSec, connections: config.connections });
  return figuresFrom(scenario, kind, result, latency);
}

async function createAgent(platform: BenchPlatform): Promise<Record<string, unknown>> {
  const res = await fetch(`${platform.url}/api/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(AGENT_BODY),
  });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 201 || typeof body.id !== 'string') throw new Error(`creating the bench agent answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

async function bench(config: BenchConfig, started: { platform?: BenchPlatform; bare?: BareServer }): Promise<number> {
  const startedAt = new Date();
  progress(`starting the control plane (${config.serverDatabaseUrl ? 'new database on DATABASE_URL' : 'embedded Postgres'})`);
  const platform = (started.platform = await startBenchPlatform(config.serverDatabaseUrl));
  const agent = await createAgent(platform);
  const bare = (started.bare = await startBareServer(agent));
  const auth = { authorization: `Bearer ${platform.apiKey}` };

  const comparisons: Comparison[] = [];
  {
    const scenario = 'get-by-id';
    const b = await measure(config, scenario, 'bare', { origin: bare.url, method: 'GET', path: `/bare/${String(agent.id)}` });
    const p = await measure(config, scenario, 'platform', { origin: platform.url, method: 'GET', path: `/api/v1/agents/${String(agent.id)}`, headers: auth });
    comparisons.push(compare(scenario, p, b));
  }
  {
    const scenario = 'create';
    const b = await measure(config, scenario, 'bare', { origin: bare.url, method: 'POST', path: '/bare', body: AGENT_BODY, uniqueNamePrefix: 'Bench' });
    const p = await measure(config, scenario, 'platform', { origin: platform.url, method: 'POST', path: '/api/v1/agents', headers: auth, body: AGENT_BODY, uniqueNamePrefix: 'Bench' });
    comparisons.push(compare(scenario, p, b));
  }

  const report = buildReport({
    startedAt,
    settings: { durationSec: config.durationSec, warmupSec: config.warmupSec, connections: config.connections, database: platform.databaseMode },
    machine: machineInfo(),
    comparisons,
  });
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}${reportFileName(startedAt)}`;
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

  const m = report.machine;
  process.stdout.write(
    [
      '',
      `API benchmark: ${config.durationSec} s per run after a ${config.warmupSec} s warm-up, ${config.connections} connections, ${platform.databaseMode} Postgres; ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}`,
      '',
      formatTable(comparisons),
      '',
      `ratios are platform / bare; results written to ${file}`,
      ...report.failures.map((f) => `FAIL ${f}`),
      '',
    ].join('\n'),
  );
  return report.ok ? 0 : 1;
}

async function main(): Promise<void> {
  const config = loadOrExit(loadBenchConfig);
  const started: { platform?: BenchPlatform; bare?: BareServer } = {};
  const shutDown = async () => {
    await started.bare?.close().catch(() => undefined);
    await started.platform?.close();
  };

  const budgetMs = 4 * (config.warmupSec + config.durationSec) * 1000 + OVERHEAD_MS;
  await runBounded({ budgetMs, run: () => bench(config, started), shutDown });
}

void main();
