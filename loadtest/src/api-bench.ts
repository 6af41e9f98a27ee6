/**
 * `pnpm bench:api [-- --scenario get-by-id|create|mixed|all] [--duration <s>] [--warmup <s>]
 * [--connections <n>] [--rate <req/s>] [--results-dir <dir>] [--cpu-prof <dir>]`: drives the control plane with
 * autocannon and measures bare Fastify routes answering the same paths in the same run.
 *
 * - get-by-id, create: closed loop on `--connections`; the tracked figure is platform req/s ÷
 *   bare req/s (what auth, rate limiting, validation and Postgres cost, largely independent
 *   of how fast the machine is).
 * - mixed: open loop at `--rate` req/s overall, 80 % reads / 20 % writes (see api-mix.ts)
 *   over four API keys created through `POST /api-keys`; the figures are latency at that
 *   rate and whether the rate held.
 *
 * Loopback only; everything started here is stopped at the end.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mixedRequests, readShare, TEMPLATE_PATHS } from './api-mix.js';
import { startBareServer } from './bare-server.js';
import { renderApiReportHtml } from './html/api-report.js';
import type { BareServer } from './bare-server.js';
import { startBenchPlatform } from './bench-platform.js';
import type { BenchPlatform } from './bench-platform.js';
import { loadBenchConfig, loadOrExit, runsScenario } from './config.js';
import type { BenchConfig } from './config.js';
import { runLoad } from './load-generator.js';
import type { LoadSpec, RequestSpec } from './load-generator.js';
import { machineInfo } from './machine-info.js';
import { withCpuProfile } from './cpu-profile.js';
import { buildReport, compare, figuresFrom, formatMachineLoad, formatMixTable, formatServerLoop, formatTable, formatTargets, reportFileName } from './report.js';
import type { Comparison, MixRequestFigures, OpenLoopSection, ScenarioFigures } from './report.js';
import { runBounded } from './run-bounded.js';
import type { PoolCounts } from './server-probe.js';

const AGENT_BODY = {
  name: 'Bench agent',
  persona: { name: 'Ava' },
  voice: { provider: 'elevenlabs', voiceId: 'v1' },
  llm: { provider: 'openai', model: 'gpt-4o-mini' },
  transcription: { provider: 'deepgram' },
  systemPromptTemplate: 'You help.',
};

const DEFAULT_RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

/** Start-up (embedded Postgres included) and shut-down allowance on top of the load runs. */
const OVERHEAD_MS = 180_000;
/** Agents the reads and updates are spread over. */
const AGENTS = 8;
/** API keys the mixed traffic rotates over. */
const API_KEYS = 4;
const KEY_SCOPES = ['agents:read', 'agents:write', 'conversations:read'];

type Target = Omit<LoadSpec, 'durationSec' | 'warmupSec'>;

interface World {
  config: BenchConfig;
  platform: BenchPlatform;
  bare: BareServer;
  agentIds: string[];
  apiKeys: string[];
}

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** The requests with every unique-name prefix tagged with the target, so names stay unique per tenant across runs. */
function tagged(requests: RequestSpec[], tag: string): RequestSpec[] {
  return requests.map((r) => (r.uniqueNamePrefix === undefined ? r : { ...r, uniqueNamePrefix: `${r.uniqueNamePrefix} ${tag}` }));
}

/** One target: warm-up and measured run in one load process; `pool` is the platform's, watched over the measured run. */
async function measure(config: BenchConfig, scenario: string, kind: ScenarioFigures['target'], target: Target, pool?: PoolCounts) {
  const shape = target.overallRate !== undefined ? `${target.overallRate} req/s over ${target.connections} connections in ${target.phases ?? 1} phases` : `${target.connections} connections`;
  progress(`${scenario} (${kind}): ${config.warmupSec > 0 ? `warm-up ${config.warmupSec} s, then ` : ''}measuring ${config.durationSec} s, ${shape}`);
  const load = () => runLoad({ ...target, requests: tagged(target.requests, kind), warmupSec: config.warmupSec, durationSec: config.durationSec }, pool ? { pool } : {});
  // Both servers run in this process, one at a time: each run is profiled on its own.
  const outcome = await withCpuProfile(config.cpuProfDir, `${scenario}-${kind}`, load);
  return { figures: figuresFrom(scenario, kind, outcome.result, outcome.latency, outcome), byLabel: outcome.byLabel };
}

async function api(platform: BenchPlatform, method: string, apiPath: string, body?: unknown, key = platform.apiKey): Promise<Record<string, unknown>> {
  const res = await fetch(`${platform.url}${apiPath}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${apiPath} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Agents and API keys through the public API, and the bare baseline replaying real answers. */
async function setUp(config: BenchConfig, started: { platform?: BenchPlatform; bare?: BareServer }): Promise<World> {
  progress(`starting the control plane (${config.serverDatabaseUrl ? 'new database on DATABASE_URL' : 'embedded Postgres'})`);
  const platform = (started.platform = await startBenchPlatform(config.serverDatabaseUrl));
  const agentIds: string[] = [];
  for (let i = 1; i <= AGENTS; i++) {
    const agent = await api(platform, 'POST', '/api/v1/agents', { ...AGENT_BODY, name: `Bench agent ${i}` });
    if (typeof agent.id !== 'string') throw new Error(`creating a bench agent answered no id: ${JSON.stringify(agent)}`);
    agentIds.push(agent.id);
  }
  const apiKeys: string[] = [];
  for (let i = 1; i <= API_KEYS; i++) {
    const created = await api(platform, 'POST', '/api/v1/api-keys', { name: `Bench key ${i}`, scopes: KEY_SCOPES });
    if (typeof created.key !== 'string') throw new Error(`creating a bench API key answered no key: ${JSON.stringify(created)}`);
    apiKeys.push(created.key);
  }
  const key = apiKeys[0]!;
  const templates = {
    agent: await api(platform, 'GET', `/api/v1/agents/${agentIds[0]!}`, undefined, key),
    agentList: await api(platform, 'GET', TEMPLATE_PATHS.agentList, undefined, key),
    agentStats: await api(platform, 'GET', TEMPLATE_PATHS.agentStats(agentIds[0]!), undefined, key),
    conversationList: await api(platform, 'GET', TEMPLATE_PATHS.conversationList, undefined, key),
  };
  const bare = (started.bare = await startBareServer(templates));
  return { config, platform, bare, agentIds, apiKeys };
}

/** A closed-loop scenario against bare, then the platform, with the same requests. */
async function closedLoop(w: World, scenario: string, requests: RequestSpec[]): Promise<Comparison> {
  const b = await measure(w.config, scenario, 'bare', { origin: w.bare.url, requests, connections: w.config.connections });
  const p = await measure(w.config, scenario, 'platform', { origin: w.platform.url, requests, connections: w.config.connections }, w.platform.pool);
  return compare(scenario, p.figures, b.figures);
}

async function openLoop(w: World): Promise<OpenLoopSection> {
  const requests = mixedRequests({ apiKeys: w.apiKeys, agentIds: w.agentIds, agentBody: AGENT_BODY, namePrefix: 'Bench mixed' });
  const { ratePerSec, openLoop: shape } = w.config;
  const target = { requests, connections: shape.connections, overallRate: ratePerSec, phases: shape.phases };
  const b = await measure(w.config, 'mixed', 'bare', { ...target, origin: w.bare.url });
  const p = await measure(w.config, 'mixed', 'platform', { ...target, origin: w.platform.url }, w.platform.pool);
  const kinds = new Map(requests.map((r) => [r.label, r.kind]));
  const byRequest = (byLabel: typeof p.byLabel): MixRequestFigures[] => byLabel.map(({ label, latency }) => ({ label, kind: kinds.get(label)!, latency }));
  return {
    scenario: 'mixed',
    requestedRatePerSec: ratePerSec,
    connections: shape.connections,
    phases: shape.phases,
    apiKeys: w.apiKeys.length,
    sequence: requests.map((r) => r.label),
    readShare: readShare(requests),
    comparison: compare('mixed', p.figures, b.figures),
    achievedShare: { platform: p.figures.requestsPerSec / ratePerSec, bare: b.figures.requestsPerSec / ratePerSec },
    byRequest: { platform: byRequest(p.byLabel), bare: byRequest(b.byLabel) },
  };
}

async function bench(config: BenchConfig, started: { platform?: BenchPlatform; bare?: BareServer }): Promise<number> {
  const startedAt = new Date();
  const w = await setUp(config, started);
  const auth = { authorization: `Bearer ${w.apiKeys[0]!}` };
  const runs = (s: Exclude<BenchConfig['scenario'], 'all'>) => runsScenario(config.scenario, s);

  const comparisons: Comparison[] = [];
  if (runs('get-by-id')) {
    comparisons.push(await closedLoop(w, 'get-by-id', [{ label: 'GET /agents/{id}', kind: 'read', method: 'GET', paths: [`/api/v1/agents/${w.agentIds[0]!}`], headers: auth }]));
  }
  // The open loop runs before create, so its list reads do not count the agents create leaves behind.
  const open = runs('mixed') ? await openLoop(w) : null;
  if (runs('create')) {
    comparisons.push(await closedLoop(w, 'create', [{ label: 'POST /agents', kind: 'write', method: 'POST', paths: ['/api/v1/agents'], headers: auth, body: AGENT_BODY, uniqueNamePrefix: 'Bench create' }]));
  }

  const report = buildReport({
    startedAt,
    settings: {
      scenario: config.scenario,
      durationSec: config.durationSec,
      warmupSec: config.warmupSec,
      connections: config.connections,
      ratePerSec: config.ratePerSec,
      database: w.platform.databaseMode,
    },
    machine: machineInfo(),
    comparisons,
    openLoop: open,
  });
  const dir = config.resultsDir ?? DEFAULT_RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, reportFileName(startedAt));
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const htmlFile = file.replace(/\.json$/, '.html');
  writeFileSync(htmlFile, renderApiReportHtml(report));

  const m = report.machine;
  const table = formatTable(open ? [...comparisons, open.comparison] : comparisons);
  process.stdout.write(
    [
      '',
      `API benchmark: ${config.durationSec} s per run after a ${config.warmupSec} s warm-up, ${w.platform.databaseMode} Postgres; ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}`,
      `closed loop (get-by-id, create): ${config.connections} connections; open loop (mixed): ${config.ratePerSec} req/s requested over ${config.openLoop.connections} connections in ${config.openLoop.phases} phases, ${API_KEYS} API keys, ${Math.round((open?.readShare ?? 0.8) * 100)} % reads`,
      '',
      table,
      ...formatMachineLoad(open ? [...comparisons, open.comparison] : comparisons),
      ...formatServerLoop(open ? [...comparisons, open.comparison] : comparisons),
      ...(open ? ['', 'open-loop mixed traffic per request (platform):', '', formatMixTable(open)] : []),
      '',
      formatTargets(report.targets),
      '',
      `ratios are platform / bare; mixed req/s is the achieved rate; results written to ${file}`,
      `HTML report: ${htmlFile}`,
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

  const scenarios = config.scenario === 'all' ? 3 : 1;
  const budgetMs = scenarios * 2 * (config.warmupSec + config.durationSec + 2) * 1000 + OVERHEAD_MS;
  await runBounded({ budgetMs, run: () => bench(config, started), shutDown });
}

void main();
