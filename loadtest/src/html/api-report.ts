/**
 * The API benchmark's report (`pnpm bench:api`) as one self-contained HTML page: req/s and
 * latency of each platform scenario beside its bare Fastify baseline, the open-loop mixed
 * scenario when it ran, the targets and the machine.
 *
 * The report's shape grows (p95/max latencies, the open-loop section, targets), and older
 * JSON files lack those parts, so the page reads the report through {@link ApiReportView},
 * where every later addition is optional, and leaves out what is missing.
 */
import type { TargetCheck } from '../calls/call-results.js';
import type { MachineLoad } from '../machine-load.js';
import { cpuMicros, fixed, formatMachineLoad, SERVER_LOOP_HEADERS, serverLoopRows } from '../report.js';
import type { BenchReport, MachineInfo } from '../report.js';
import { barCompareSvg, escapeHtml, htmlPage, htmlTable } from './charts.js';
import type { Cell, CompareRow, PageSection } from './charts.js';
import { POOL_SAMPLE_MS } from '../server-probe.js';
import type { ServerFigures } from '../server-probe.js';

/** One run's figures as the page reads them. */
export interface FiguresView {
  scenario: string;
  target: string;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP95Ms?: number;
  latencyP99Ms: number;
  latencyMaxMs?: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  totalRequests: number;
  durationSec: number;
  cpuMsPerRequest?: number | null;
  machine?: MachineLoad | null;
  server?: ServerFigures | null;
}

/** A platform run beside its bare baseline. */
export interface ComparisonView {
  scenario: string;
  platform: FiguresView;
  bare: FiguresView;
  ratioRequestsPerSec: number | null;
  ratioP99: number | null;
  ratioCpuPerRequest?: number | null;
}

/** Latencies of one kind of request of the open-loop mix. */
export interface MixRequestView {
  label: string;
  kind?: string;
  latency: { p50Ms: number; p95Ms?: number; p99Ms: number; maxMs?: number; samples: number };
}

/** The open-loop mixed scenario. */
export interface OpenLoopView {
  requestedRatePerSec?: number;
  connections?: number;
  phases?: number;
  apiKeys?: number;
  sequence?: string[];
  readShare?: number;
  comparison: ComparisonView;
  achievedShare?: { platform: number; bare: number };
  byRequest?: { platform: MixRequestView[]; bare: MixRequestView[] };
}

/** The parts of a {@link BenchReport} the page reads; later additions optional. */
export interface ApiReportView {
  startedAt: string;
  settings: Record<string, unknown>;
  machine: MachineInfo;
  comparisons: ComparisonView[];
  openLoop?: OpenLoopView | null;
  targets?: TargetCheck[];
  failures: string[];
  ok: boolean;
}

function resultCell(pass: boolean | null): Cell {
  return pass === null ? { text: '-', className: 'na' } : pass ? { text: 'PASS', className: 'pass' } : { text: 'FAIL', className: 'fail' };
}

function para(text: string, className?: string): string {
  return `<p${className ? ` class="${className}"` : ''}>${escapeHtml(text)}</p>`;
}

function figure(svg: string, caption?: string): string {
  return `<figure>${svg}${caption ? `<figcaption>${escapeHtml(caption)}</figcaption>` : ''}</figure>`;
}

const FIGURE_HEADERS = ['scenario', 'target', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', 'CPU µs/req', 'req/s ratio', 'p99 ratio', 'CPU ratio'];

function figuresRows(c: ComparisonView): Cell[][] {
  const row = (f: FiguresView, ratios: [string, string, string]): Cell[] => [
    c.scenario,
    f.target,
    fixed(f.requestsPerSec, 0),
    fixed(f.latencyP50Ms, 2),
    fixed(f.latencyP95Ms ?? null, 2),
    fixed(f.latencyP99Ms, 2),
    fixed(f.latencyMaxMs ?? null, 2),
    String(f.non2xx),
    String(f.errors),
    cpuMicros(f.cpuMsPerRequest),
    ...ratios,
  ];
  return [row(c.platform, [fixed(c.ratioRequestsPerSec, 3), fixed(c.ratioP99, 2), fixed(c.ratioCpuPerRequest ?? null, 2)]), row(c.bare, ['', '', ''])];
}

function platformVsBare(label: string, platform: number | null, bare: number | null): CompareRow {
  return {
    label,
    values: [
      { name: 'platform', value: platform },
      { name: 'bare Fastify', value: bare },
    ],
  };
}

function summary(view: ApiReportView): PageSection {
  const parts = [para(view.ok ? 'OK: every run answered 2xx with no connection errors.' : 'NOT OK: the figures of some runs cannot be trusted (see below).', view.ok ? 'ok' : 'bad'), para(`Started ${view.startedAt}.`)];
  if (view.failures.length > 0) parts.push(`<ul>${view.failures.map((f) => `<li>${escapeHtml(f)}</li>`).join('')}</ul>`);
  for (const line of formatMachineLoad([...(view.comparisons ?? []), ...(view.openLoop ? [view.openLoop.comparison] : [])])) {
    parts.push(para(line, line.startsWith('WARNING') ? 'bad' : 'muted'));
  }
  if (view.targets && view.targets.length > 0) {
    parts.push(htmlTable(['target', 'limit', 'measured', 'result'], view.targets.map((t) => [t.name, t.limit, t.measured, resultCell(t.pass)])));
  }
  return { heading: 'Summary and targets', html: parts.join('\n') };
}

function closedLoop(view: ApiReportView): PageSection | null {
  const cs = view.comparisons ?? [];
  if (cs.length === 0) return null;
  const throughput = barCompareSvg(
    cs.map((c) => platformVsBare(`${c.scenario} (${fixed(c.ratioRequestsPerSec, 2)}x)`, c.platform.requestsPerSec, c.bare.requestsPerSec)),
    { title: 'Throughput: platform vs bare Fastify', unit: 'req/s' },
  );
  const latency = barCompareSvg(
    cs.flatMap((c) => [platformVsBare(`${c.scenario} p50`, c.platform.latencyP50Ms, c.bare.latencyP50Ms), platformVsBare(`${c.scenario} p99`, c.platform.latencyP99Ms, c.bare.latencyP99Ms)]),
    { title: 'Latency: platform vs bare Fastify', unit: 'ms' },
  );
  return {
    heading: 'Closed-loop scenarios',
    html: [`<div class="charts">${figure(throughput, 'The label carries platform req/s ÷ bare req/s.')}${figure(latency)}</div>`, htmlTable(FIGURE_HEADERS, cs.flatMap(figuresRows))].join('\n'),
  };
}

function openLoop(view: ApiReportView): PageSection | null {
  const o = view.openLoop;
  if (!o) return null;
  const c = o.comparison;
  const parts: string[] = [];
  const facts = [
    o.requestedRatePerSec !== undefined ? `requested ${fixed(o.requestedRatePerSec, 0)} req/s` : null,
    o.achievedShare ? `achieved ${fixed(o.achievedShare.platform * 100, 1)} % of it on the platform, ${fixed(o.achievedShare.bare * 100, 1)} % on bare Fastify` : null,
    o.readShare !== undefined ? `${fixed(o.readShare * 100, 0)} % reads` : null,
    o.connections !== undefined ? `${o.connections} connections` : null,
    o.phases !== undefined ? `${o.phases} load instances` : null,
    o.apiKeys !== undefined ? `${o.apiKeys} API keys` : null,
  ].filter((f): f is string => f !== null);
  if (facts.length > 0) parts.push(para(`${facts.join('; ')}.`));
  const rate = barCompareSvg([platformVsBare('achieved req/s', c.platform.requestsPerSec, c.bare.requestsPerSec), ...(o.requestedRatePerSec !== undefined ? [{ label: 'requested req/s', values: [{ name: 'requested', value: o.requestedRatePerSec }] }] : [])], {
    title: 'Open loop: achieved rate',
    unit: 'req/s',
  });
  const latency = barCompareSvg(
    [
      platformVsBare('p50', c.platform.latencyP50Ms, c.bare.latencyP50Ms),
      ...(c.platform.latencyP95Ms !== undefined ? [platformVsBare('p95', c.platform.latencyP95Ms, c.bare.latencyP95Ms ?? null)] : []),
      platformVsBare('p99', c.platform.latencyP99Ms, c.bare.latencyP99Ms),
    ],
    { title: 'Open loop: latency', unit: 'ms' },
  );
  parts.push(`<div class="charts">${figure(rate)}${figure(latency)}</div>`, htmlTable(FIGURE_HEADERS, figuresRows(c)));
  const by = o.byRequest;
  if (by && by.platform.length > 0) {
    const bare = new Map(by.bare.map((b) => [b.label, b]));
    parts.push(
      figure(
        barCompareSvg(
          by.platform.map((p) => platformVsBare(`${p.label} p99`, p.latency.p99Ms, bare.get(p.label)?.latency.p99Ms ?? null)),
          { title: 'Open loop: p99 per kind of request', unit: 'ms' },
        ),
      ),
      htmlTable(
        ['request', 'kind', 'target', 'n', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'],
        [...by.platform.map((m) => ['platform', m] as const), ...by.bare.map((m) => ['bare', m] as const)].map(([target, m]): Cell[] => [
          m.label,
          { text: m.kind ?? '-', className: '' },
          { text: target, className: '' },
          String(m.latency.samples),
          fixed(m.latency.p50Ms, 2),
          fixed(m.latency.p95Ms ?? null, 2),
          fixed(m.latency.p99Ms, 2),
          fixed(m.latency.maxMs ?? null, 2),
        ]),
      ),
    );
  }
  if (o.sequence && o.sequence.length > 0) parts.push(para(`Each connection cycles through: ${o.sequence.join(', ')}.`, 'muted'));
  return { heading: 'Open-loop mixed traffic', html: parts.join('\n') };
}

function servingProcess(view: ApiReportView): PageSection | null {
  const rows = serverLoopRows([...view.comparisons, ...(view.openLoop ? [view.openLoop.comparison] : [])]);
  if (rows.length === 0) return null;
  return {
    heading: 'The serving process',
    html: [
      para(
        `During each measured run: the delay of the one event loop that serves every request, how long its thread ran and how long it was ready but waited for a core, and the control plane's Postgres pool sampled every ${POOL_SAMPLE_MS} ms. A latency tail with little loop delay and requests waiting on the pool is Postgres's; one with a long loop delay and a long wait for a core is the machine's; a long loop delay with little wait is the loop's own work.`,
        'muted',
      ),
      htmlTable([...SERVER_LOOP_HEADERS], rows),
    ].join('\n'),
  };
}

function settings(view: ApiReportView): PageSection {
  const m = view.machine;
  const rows: Cell[][] = Object.entries(view.settings ?? {}).map(([k, v]) => [k, { text: typeof v === 'string' ? v : JSON.stringify(v), className: '' }]);
  rows.push(['machine', { text: `${m.cpus} × ${m.cpuModel}`, className: '' }], ['runtime', { text: `Node ${m.node}, ${m.platform} ${m.arch}`, className: '' }]);
  return { heading: 'Settings and machine', html: htmlTable(['setting', 'value'], rows) };
}

/** The API benchmark's report as a self-contained HTML page. */
export function renderApiReportHtml(report: BenchReport): string {
  const view: ApiReportView = report;
  const sections = [summary(view), closedLoop(view), openLoop(view), servingProcess(view), settings(view)].filter((s): s is PageSection => s !== null);
  return htmlPage(`API benchmark, ${view.startedAt}`, sections);
}
