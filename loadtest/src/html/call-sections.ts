/**
 * The sections of the call benchmark's HTML page (see `renderCallReportHtml` in
 * `calls/call-report.ts`), each built from the inline SVG charts.
 */
import { heapGrowthText } from '../calls/call-results.js';
import type { CallBenchReport, Distribution, Measured, TargetCheck, TargetRun } from '../calls/call-results.js';
import { DESIGNED_LEAD_GAPS, latePer10kText, withinShare } from '../calls/frame-gaps.js';
import { LATE_WHERE_HEADERS, LATE_WHERE_NOTE, lateWhereRows } from '../calls/late-gaps.js';
import { fixed } from '../report.js';
import { loopCoreWaitRows, msOf, pipelineThreadRows, processCpuRows } from '../calls/thread-figures.js';
import { barCompareSvg, escapeHtml, histogramSvg, htmlTable, lineChartSvg, stackedBarsSvg } from './charts.js';
import type { Cell, CompareRow, PageSection, TargetLine } from './charts.js';

/** Concurrent calls the issue's targets are set at. */
const TARGET_CONCURRENCY = 200;

function figure(svg: string, caption?: string): string {
  return `<figure>${svg}${caption ? `<figcaption>${escapeHtml(caption)}</figcaption>` : ''}</figure>`;
}

function charts(...figures: string[]): string {
  return `<div class="charts">\n${figures.join('\n')}\n</div>`;
}

function para(text: string, className?: string): string {
  return `<p${className ? ` class="${className}"` : ''}>${escapeHtml(text)}</p>`;
}

function resultCell(pass: boolean | null): Cell {
  return pass === null ? { text: '-', className: 'na' } : pass ? { text: 'PASS', className: 'pass' } : { text: 'FAIL', className: 'fail' };
}

function runsOf(report: CallBenchReport): TargetRun[] {
  return report.relay ? [report.gateway, report.relay] : [report.gateway];
}

function distRow(name: string, d: Distribution, digits = 1): Cell[] {
  return [name, String(d.count), fixed(d.p50, digits), fixed(d.p95, digits), fixed(d.p99, digits), fixed(d.max, digits), fixed(d.mean, digits)];
}

const DIST_HEADERS = ['figure', 'n', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'mean ms'];

function cpuMs(run: TargetRun | null): number | null {
  return msOf(run?.process.cpuPerCallSecond);
}

/** The machine's load average around the run, in reports that carry it (added after the first version). */
function loadAverageOf(report: CallBenchReport): { atStart: number; atEnd: number } | null {
  return (report as { loadAverage?: { atStart: number; atEnd: number } }).loadAverage ?? null;
}

function summary(report: CallBenchReport, targets: TargetCheck[]): PageSection {
  const g = report.gateway;
  const failed = targets.filter((t) => t.pass === false).map((t) => t.name);
  const verdict = report.ok ? 'OK: every measured target passed and no call failed.' : `NOT OK${failed.length > 0 ? `: ${failed.join(', ')}` : ': see failures'}.`;
  const lines = [
    para(verdict, report.ok ? 'ok' : 'bad'),
    para(
      `Started ${report.startedAt}. Gateway: ${g.calls.completed} of ${g.calls.planned} calls completed, peak ${g.peakConcurrentCalls} concurrent, ` +
        `turn latency p50 ${fixed(g.turnLatency.p50, 0)} ms / p95 ${fixed(g.turnLatency.p95, 0)} ms. ` +
        `CPU per call-second ${fixed(report.cpuRatioToRelay, 2)}x the bare relay's; ` +
        `implied capacity ${fixed(report.capacity.calls, 0)} calls at ${report.capacity.cpuBudgetPercent} % of ${report.capacity.cores} cores.`,
    ),
  ];
  if (g.peakConcurrentCalls < TARGET_CONCURRENCY) {
    lines.push(para(`The issue's targets are set at ${TARGET_CONCURRENCY} concurrent calls; this run reached ${g.peakConcurrentCalls}.`, 'muted'));
  }
  const load = loadAverageOf(report);
  if (load && Math.max(load.atStart, load.atEnd) > report.machine.cpus) {
    lines.push(para(`The machine was busy: load average ${fixed(load.atStart, 1)} at the start and ${fixed(load.atEnd, 1)} at the end on ${report.machine.cpus} cores, so other work competed with the processes measured.`, 'bad'));
  }
  const notes = runsOf(report).flatMap((run) => (run.notes ?? []).map((n) => `${run.target}: ${n}`));
  if (notes.length > 0) lines.push(`<p>Notes:</p>\n<ul>${notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>`);
  const calls = htmlTable(
    ['run', 'planned', 'connected', 'completed', 'failed', 'dropped', 'peak concurrent', 'duration s'],
    runsOf(report).map((run) => [run.target, ...[run.calls.planned, run.calls.connected, run.calls.completed, run.calls.failed, run.calls.dropped, run.peakConcurrentCalls].map(String), fixed(run.durationSec, 1)]),
  );
  const table = htmlTable(
    ['target', 'limit', 'measured', 'result'],
    targets.map((t) => [t.name, t.limit, t.measured, resultCell(t.pass)]),
  );
  return { heading: 'Summary and targets', html: [...lines, calls, table].join('\n') };
}

function latency(report: CallBenchReport): PageSection {
  const g = report.gateway;
  const parts = [charts(figure(histogramSvg(g.turnLatency.histogram, { title: 'Turn latency: end of caller speech → first agent audio' }), `${g.turnLatency.count} turns`))];
  const s = g.stages;
  if (!s) return { heading: 'Turn latency', html: parts.join('\n') };
  const additive: [string, Measured][] = [
    ['endpointing wait', s.endpointing],
    ['LLM first token', s.llmFirstToken],
    ['LLM first phrase', s.llmFirstPhrase],
    ['TTS first byte', s.ttsFirstByte],
    ['our overhead', s.overhead],
  ];
  const row = (label: string, pick: (d: Distribution) => number | null) => ({ label, segments: additive.map(([name, d]) => ({ name, value: pick(d) })) });
  parts.push(
    charts(
      figure(
        stackedBarsSvg([row('p50', (d) => d.p50), row('p95', (d) => d.p95)], { title: 'Where a turn’s time goes (per stage)' }),
        `Each stage's own percentile, stacked (the sum is not the total's percentile: total p50 ${fixed(s.total.p50, 0)} ms, p95 ${fixed(s.total.p95, 0)} ms). STT final falls inside the endpointing wait.`,
      ),
      figure(histogramSvg(s.overhead.histogram, { title: 'Our overhead per turn', target: { value: 30, label: 'p99 <= 30 ms' } }), `p50 ${fixed(s.overhead.p50, 2)} ms (target <= 10), p99 ${fixed(s.overhead.p99, 2)} ms (target <= 30)`),
    ),
  );
  const rows: [string, Distribution][] = [['turn latency (total at the caller)', g.turnLatency], ...additive, ['STT final', s.stt], ['total (gateway record)', s.total]];
  parts.push(htmlTable(DIST_HEADERS, rows.map(([name, d]) => distRow(name, d))));
  return { heading: 'Turn latency and per-stage breakdown', html: parts.join('\n') };
}

function bargeIn(report: CallBenchReport): PageSection {
  const b = report.gateway.bargeInReaction;
  const stt = report.settings.sttLatencyMs;
  return {
    heading: 'Barge-in reaction',
    html: [
      charts(figure(histogramSvg(b.histogram, { title: 'Caller speech onset → clear received', target: { value: 150, label: 'p95 <= 150 ms' } }), `${b.count} barge-ins, simulated STT latency ${stt} ms`)),
      htmlTable(DIST_HEADERS, [distRow('barge-in reaction', b)]),
    ].join('\n'),
  };
}

function pacing(report: CallBenchReport): PageSection {
  const late: TargetLine = { value: 40, label: 'late > 40 ms' };
  const figures = runsOf(report).flatMap((run) => [
    figure(histogramSvg(run.framePacing.gaps.histogram, { title: `${run.target}: gaps between outbound frames`, target: late }), `${run.framePacing.frames} frames; ${run.framePacing.lateFramesAtCallers} late at the callers (${latePer10kText(run.framePacing.lateFramesAtCallers, run.framePacing.frames)})`),
    figure(histogramSvg(run.framePacing.jitter.histogram, { title: `${run.target}: pacing jitter |gap - 20 ms| (steady state: without each utterance's first ${DESIGNED_LEAD_GAPS} gaps)`, target: { value: 5, label: 'p99 <= 5 ms' } })),
  ]);
  const rows = runsOf(report).flatMap((run) => [distRow(`${run.target} frame gap`, run.framePacing.gaps, 2), distRow(`${run.target} jitter`, run.framePacing.jitter, 2)]);
  const gw = report.gateway.framePacing.lateFramesAtGateway;
  const whereRows = lateWhereRows(runsOf(report));
  return {
    heading: 'Outbound frame pacing',
    html: [
      charts(...figures),
      htmlTable(DIST_HEADERS, rows),
      para(`Late frames reported by the gateway's own pacer: ${gw === null ? '-' : gw}. Gaps the pacer measured as it wrote them (before the network and the callers' event loops): ${withinShare(report.gateway.framePacing.gapsAtGateway)} within 20 ± 5 ms. A gap over ${report.gateway.framePacing.utteranceBreakMs} ms starts a new utterance and is not counted.`, 'muted'),
      ...(whereRows.length > 0 ? [htmlTable(LATE_WHERE_HEADERS, whereRows), para(LATE_WHERE_NOTE, 'muted')] : []),
    ].join('\n'),
  };
}

function overTime(report: CallBenchReport): PageSection {
  const runs = runsOf(report);
  const series = (pick: (s: TargetRun['process']['samples'][number]) => number) => runs.map((run) => ({ name: run.target, points: run.process.samples.map((s): [number, number] => [s.t, pick(s)]) }));
  const { cores, cpuBudgetPercent } = report.capacity;
  const xLabel = 's since the run started';
  return {
    heading: 'Processes over time',
    html: charts(
      figure(lineChartSvg(series((s) => s.cpuPercent), { title: 'CPU (% of one core)', unit: '%', xLabel, target: { value: cores * cpuBudgetPercent, label: `${cpuBudgetPercent} % of ${cores} cores` } })),
      figure(lineChartSvg(series((s) => s.activeCalls), { title: 'Active calls', unit: 'calls', xLabel })),
      figure(lineChartSvg(series((s) => s.rssMb), { title: 'RSS', unit: 'MB', xLabel })),
      figure(lineChartSvg(series((s) => s.loopDelayP99Ms), { title: 'Event-loop delay p99', unit: 'ms', xLabel, target: { value: 20, label: 'p99 <= 20 ms' } })),
    ),
  };
}

/** The gateway's CPU per call-second by thread next to the relay's (one thread does its work): the loop's bar against the relay's shows what the carrier side costs, the rest is the pipeline's. */
function threadBars(report: CallBenchReport): CompareRow[] {
  const split = report.gateway.cpuSplit;
  const ms = cpuMs(report.gateway);
  if (!split || ms === null) return [];
  return [
    {
      label: 'gateway by thread',
      values: [
        { name: 'event loop', value: split.loop * ms },
        { name: 'pipeline threads', value: split.pipelineThreads * ms },
        { name: 'other (GC, libuv)', value: split.other * ms },
        { name: 'relay', value: cpuMs(report.relay) },
      ],
    },
  ];
}

function cost(report: CallBenchReport): PageSection {
  const g = report.gateway.process;
  const r = report.relay?.process ?? null;
  const both = (f: (p: TargetRun['process']) => string): Cell[] => [f(g), r ? f(r) : '-'];
  const chart = barCompareSvg(
    [
      {
        label: 'CPU ms per call-second',
        values: [
          { name: 'gateway', value: cpuMs(report.gateway) },
          { name: 'relay', value: cpuMs(report.relay) },
        ],
      },
      ...threadBars(report),
    ],
    { title: `Gateway vs bare relay: CPU per call-second${report.gateway.process.cpuWindow === 'steady' ? ', steady state' : ''}`, unit: 'ms' },
  );
  const table = htmlTable(
    ['process', 'gateway', 'relay'],
    [
      ...processCpuRows(report),
      ['RSS before / steady / peak MB', ...both((p) => `${fixed(p.rssBeforeMb, 0)} / ${fixed(p.rssSteadyMb, 0)} / ${fixed(p.rssPeakMb, 0)}`)],
      ['RSS growth per call MB', ...both((p) => fixed(p.rssGrowthPerCallMb, 3))],
      ['event-loop delay p50 / p99 / max ms', ...both((p) => `${fixed(p.eventLoopDelay.p50, 1)} / ${fixed(p.eventLoopDelay.p99, 1)} / ${fixed(p.eventLoopDelay.max, 1)}`)],
      ...loopCoreWaitRows(report.gateway.loopCoreWait),
      ...pipelineThreadRows(report.gateway.pipelineThreads),
    ],
  );
  const note = report.relay ? `Ratio ${fixed(report.cpuRatioToRelay, 2)}x (target <= 2x).` : 'The bare relay did not run in this report, so there is no ratio.';
  return { heading: 'Gateway vs bare relay', html: [charts(figure(chart, note)), table].join('\n') };
}

/** Caller processes above this CPU % (of one core) may be what the run measured. */
const GENERATOR_BUSY_PERCENT = 80;

function generator(report: CallBenchReport): PageSection | null {
  const rows = runsOf(report).flatMap((run) =>
    (run.generator ?? []).map((g, i): Cell[] => [
      run.target,
      String(i + 1),
      { text: fixed(g.cpuPercent, 0), className: g.cpuPercent > GENERATOR_BUSY_PERCENT ? 'fail' : 'num' },
      fixed(g.loopDelayP99Ms, 1),
      fixed(g.coreWaitMsPerSec ?? null, 1),
      g.gcPausesOver10Ms === undefined ? '-' : String(g.gcPausesOver10Ms),
      fixed(g.gcLongestPauseMs ?? null, 1),
    ]),
  );
  if (rows.length === 0) return null;
  const busy = runsOf(report).some((run) => (run.generator ?? []).some((g) => g.cpuPercent > GENERATOR_BUSY_PERCENT));
  const note = busy
    ? para(`A caller process used more than ${GENERATOR_BUSY_PERCENT} % of a core: the figures may measure the generator, not the server. Use more workers.`, 'bad')
    : para('Every caller process stayed far from saturated, so the figures measure the server.', 'muted');
  // Reports from before the late frames were sorted have neither the figures nor that table.
  const sorted = runsOf(report).some((run) => run.framePacing.lateAtCallersWhere !== undefined);
  const held = sorted ? [para('A caller process that waited for a core or paused for its garbage collector read its frames late: the table of late frames at the callers (Outbound frame pacing) counts those apart.', 'muted')] : [];
  return { heading: 'Caller processes (the generator)', html: [note, htmlTable(['run', 'process', 'CPU % of one core', 'loop delay p99 ms', 'waited for a core ms per s', 'GC pauses > 10 ms', 'longest GC pause ms'], rows), ...held].join('\n') };
}

function failures(report: CallBenchReport): PageSection | null {
  const rows = runsOf(report).flatMap((run) => run.failures.map((f): Cell[] => [run.target, f.callSid, f.kind, { text: f.message, className: '' }]));
  if (rows.length === 0) return null;
  return { heading: 'Failed calls (first ones)', html: htmlTable(['run', 'call', 'kind', 'message'], rows) };
}

function settings(report: CallBenchReport): PageSection {
  const s = report.settings;
  const m = report.machine;
  const pairs: [string, string][] = [
    ['calls', String(s.calls)],
    ['ramp / steady s', `${s.rampSec} / ${s.steadySec}`],
    ['caller workers', String(s.workers)],
    ['simulated STT latency ms', String(s.sttLatencyMs)],
    ['bare relay baseline', s.relay ? 'yes' : 'no'],
    ['gateway pipeline threads', s.pipelineThreads === null ? '-' : s.pipelineThreads === 0 ? '0 (pipelines on the event loop)' : String(s.pipelineThreads)],
    ['gateway ElevenLabs socket', s.ttsWebSocket === undefined ? 'stream-input (reports before the setting)' : (s.ttsWebSocket ?? '-')],
    ['gateway V8 heap growth', heapGrowthText(s.heapGrowth)],
    ['gateway Node flags', s.gatewayNodeFlags.length > 0 ? s.gatewayNodeFlags.join(' ') : 'none'],
    ['machine', `${m.cpus} × ${m.cpuModel}`],
    ['runtime', `Node ${m.node}, ${m.platform} ${m.arch}`],
  ];
  const load = loadAverageOf(report);
  if (load) pairs.push(['load average (1 min) at start / end', `${fixed(load.atStart, 2)} / ${fixed(load.atEnd, 2)}`]);
  const rows: Cell[][] = pairs.map(([k, v]) => [k, { text: v, className: '' }]);
  const script = s.script.length > 0 ? `<p>Caller script:</p>\n<ol>${s.script.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ol>` : '';
  return { heading: 'Settings and machine', html: [htmlTable(['setting', 'value'], rows), script].join('\n') };
}

/** Every section of the call report, in reading order. */
export function callReportSections(report: CallBenchReport, targets: TargetCheck[]): PageSection[] {
  const out = [summary(report, targets), latency(report), bargeIn(report), pacing(report), overTime(report), cost(report)];
  for (const extra of [generator(report), failures(report)]) if (extra) out.push(extra);
  out.push(settings(report));
  return out;
}
