/**
 * A capacity sweep of `pnpm bench:calls` (`--sweep 50,100,150,200`): one full run at each number
 * of concurrent calls, each with fresh processes and its own report, then one summary that
 * answers "how many concurrent calls does one gateway hold, and at what latency": the largest
 * level at which every call-quality target passed (no failed call, frames on time, quick turns
 * and barge-in: `callQualityChecks`), with every level below it held too, and the figures of
 * each level side by side, in the terminal, a JSON file and an HTML page with charts.
 */
import { basename } from 'node:path';
import { escapeHtml, htmlPage, htmlTable, lineChartSvg } from '../html/charts.js';
import type { Cell, LineSeries } from '../html/charts.js';
import { fixed, textTable } from '../report.js';
import type { MachineInfo } from '../report.js';
import { CALL_TARGETS, PACING_CHECK_NAMES, callQualityChecks } from './call-report.js';
import type { CallBenchReport } from './call-results.js';
import { latePer10k } from './frame-gaps.js';
import { heldCallerLate } from './late-gaps.js';
import type { LateFramesWhere } from './late-gaps.js';
import { msOf } from './thread-figures.js';

/** One level of a sweep: what its run measured, in the units the names say. */
export interface SweepLevel {
  /** Concurrent calls planned at this level. */
  calls: number;
  /** Concurrent calls the callers reached. */
  peakConcurrentCalls: number;
  /** Every call-quality target passed (one not measurable, such as barge-in with `--stt-latency-ms`, is left out). */
  held: boolean;
  /** The call-quality targets this level missed, by name. */
  missed: string[];
  /** Every target of the level's own report passed (CPU against the relay and RSS growth included). */
  ok: boolean;
  plannedCalls: number;
  failedCalls: number;
  turnLatencyMs: { p50: number | null; p95: number | null; p99: number | null };
  overheadP99Ms: number | null;
  bargeInP95Ms: number | null;
  jitterP99Ms: number | null;
  lateAtCallers: number;
  lateAtCallersPer10k: number | null;
  lateAtPacer: number | null;
  /** The gateway's late frames at the callers by where each became late (late-gaps.ts); null in reports from before that was recorded. */
  lateAtCallersWhere: LateFramesWhere | null;
  /**
   * The bare relay's pacing at the same calls (null without the relay): the floor the callers and
   * the machine set, since the relay echoes frames with no pipeline. Not part of the verdict.
   */
  relayJitterP99Ms: number | null;
  relayLateAtCallersPer10k: number | null;
  loopDelayP99Ms: number | null;
  cpuPerCallSecondMs: number | null;
  relayCpuPerCallSecondMs: number | null;
  cpuRatioToRelay: number | null;
  rssGrowthPerCallMb: number | null;
  /** The level's report files, by name, in the sweep's directory. */
  files: { json: string; html: string };
}

/** The file a sweep writes beside its levels' reports. */
export interface CallSweepReport {
  kind: 'call-sweep';
  startedAt: string;
  /** The sweep's options; `workers` is the caller processes asked for, each level running at most as many as its calls. */
  settings: { levels: number[]; rampSec: number; steadySec: number; workers: number; relay: boolean; sttLatencyMs: number };
  machine: MachineInfo;
  levels: SweepLevel[];
  /** The largest level held with every level below it held too; null when the first was not. */
  heldUpTo: number | null;
  /** The first level not held and what it missed; null when every level was held. */
  firstNotHeld: { calls: number; missed: string[] } | null;
}

/** One level's figures from its report; `files` are the report's paths (kept by name only). */
export function sweepLevel(report: CallBenchReport, files: { json: string; html: string }): SweepLevel {
  const g = report.gateway;
  const relay = report.relay;
  const checks = callQualityChecks(report);
  const missed = checks.filter((c) => c.pass === false).map((c) => c.name);
  return {
    calls: report.settings.calls,
    peakConcurrentCalls: g.peakConcurrentCalls,
    held: missed.length === 0,
    missed,
    ok: report.ok,
    plannedCalls: g.calls.planned,
    failedCalls: g.calls.failed,
    turnLatencyMs: { p50: g.turnLatency.p50, p95: g.turnLatency.p95, p99: g.turnLatency.p99 },
    overheadP99Ms: g.stages?.overhead.p99 ?? null,
    bargeInP95Ms: g.bargeInReaction.p95,
    jitterP99Ms: g.framePacing.jitter.p99,
    lateAtCallers: g.framePacing.lateFramesAtCallers,
    lateAtCallersPer10k: latePer10k(g.framePacing.lateFramesAtCallers, g.framePacing.frames),
    lateAtPacer: g.framePacing.lateFramesAtGateway,
    lateAtCallersWhere: g.framePacing.lateAtCallersWhere ?? null,
    relayJitterP99Ms: relay ? relay.framePacing.jitter.p99 : null,
    relayLateAtCallersPer10k: relay ? latePer10k(relay.framePacing.lateFramesAtCallers, relay.framePacing.frames) : null,
    loopDelayP99Ms: g.process.eventLoopDelay.p99,
    cpuPerCallSecondMs: msOf(g.process.cpuPerCallSecond),
    relayCpuPerCallSecondMs: msOf(relay?.process.cpuPerCallSecond),
    cpuRatioToRelay: report.cpuRatioToRelay,
    rssGrowthPerCallMb: g.process.rssGrowthPerCallMb,
    files: { json: basename(files.json), html: basename(files.html) },
  };
}

/** The summary of the levels run, in the order run (ascending calls). */
export function buildSweepReport(input: { startedAt: Date; settings: CallSweepReport['settings']; machine: MachineInfo; levels: SweepLevel[] }): CallSweepReport {
  const notHeld = input.levels.findIndex((l) => !l.held);
  const heldCount = notHeld === -1 ? input.levels.length : notHeld;
  const first = notHeld === -1 ? null : input.levels[notHeld]!;
  return {
    kind: 'call-sweep',
    startedAt: input.startedAt.toISOString(),
    settings: input.settings,
    machine: input.machine,
    levels: input.levels,
    heldUpTo: heldCount > 0 ? input.levels[heldCount - 1]!.calls : null,
    firstNotHeld: first ? { calls: first.calls, missed: first.missed } : null,
  };
}

/** The answer in one sentence, for the terminal and the page. */
export function sweepAnswer(sweep: CallSweepReport): string {
  const levels = sweep.levels;
  const runOut = levels.length < sweep.settings.levels.length ? ` (${levels.length} of ${sweep.settings.levels.length} levels ran)` : '';
  const miss = sweep.firstNotHeld ? `${sweep.firstNotHeld.calls} calls missed ${sweep.firstNotHeld.missed.join(', ')}` : '';
  if (sweep.heldUpTo === null) return sweep.firstNotHeld ? `Not held even at the first level: ${miss}${runOut}` : `No level ran${runOut}`;
  const at = levels.find((l) => l.calls === sweep.heldUpTo)!;
  const latency = `turn latency p50 ${fixed(at.turnLatencyMs.p50, 0)} ms, p95 ${fixed(at.turnLatencyMs.p95, 0)} ms`;
  const all = sweep.firstNotHeld === null && runOut === '' ? ' (the highest level tried: the limit may be higher)' : '';
  return `Held up to ${sweep.heldUpTo} concurrent calls${all}, at ${latency}${miss ? `; ${miss}` : ''}${runOut}`;
}

export const SWEEP_HEADERS = [
  'calls',
  'held',
  'failed',
  'turn latency p50 / p95 ms',
  'overhead p99 ms',
  'barge-in p95 ms',
  'jitter p99 ms',
  'relay jitter p99 ms',
  'late at callers (per 10k)',
  'relay late per 10k',
  'late at pacer',
  'loop delay p99 ms',
  'CPU ms per call-s',
  '÷ relay',
  'RSS MB per call',
] as const;

/** One row per level, for the terminal and the page alike. */
export function sweepRows(sweep: CallSweepReport): string[][] {
  return sweep.levels.map((l) => [
    l.peakConcurrentCalls === l.calls ? String(l.calls) : `${l.calls} (reached ${l.peakConcurrentCalls})`,
    l.held ? 'yes' : 'no',
    `${l.failedCalls} of ${l.plannedCalls}`,
    `${fixed(l.turnLatencyMs.p50, 0)} / ${fixed(l.turnLatencyMs.p95, 0)}`,
    fixed(l.overheadP99Ms, 0),
    fixed(l.bargeInP95Ms, 0),
    fixed(l.jitterP99Ms, 2),
    fixed(l.relayJitterP99Ms, 2),
    `${l.lateAtCallers} (${fixed(l.lateAtCallersPer10k, 2)})`,
    fixed(l.relayLateAtCallersPer10k, 2),
    fixed(l.lateAtPacer, 0),
    fixed(l.loopDelayP99Ms, 1),
    fixed(l.cpuPerCallSecondMs, 2),
    fixed(l.cpuRatioToRelay, 2),
    fixed(l.rssGrowthPerCallMb, 3),
  ]);
}

const PACING_TARGETS = new Set<string>(Object.values(PACING_CHECK_NAMES));

/**
 * What a level missed, then what puts a pacing miss in proportion: how many of the late frames at
 * the callers a held caller process read late (the generator, not the gateway: late-gaps.ts), and,
 * when the relay ran, the relay's pacing at the same calls (whether the machine and the callers
 * let even a relay with no pipeline keep time).
 */
export function sweepMisses(l: SweepLevel): string {
  const missed = l.missed.join('; ');
  if (!l.missed.some((m) => PACING_TARGETS.has(m))) return missed;
  const notes: string[] = [];
  const held = heldCallerLate(l.lateAtCallersWhere);
  if (l.missed.includes(PACING_CHECK_NAMES.lateAtCallers) && held) notes.push(`${held.count} of the ${l.lateAtCallers} late frames at the callers ${held.text}`);
  if (l.relayJitterP99Ms !== null) notes.push(`the bare relay at ${l.calls} calls: jitter p99 ${fixed(l.relayJitterP99Ms, 2)} ms, ${fixed(l.relayLateAtCallersPer10k, 2)} late frames per 10k`);
  return notes.length > 0 ? `${missed} (${notes.join('; ')})` : missed;
}

/** The terminal's summary: the table, then the answer and each level's misses. */
export function formatSweepTable(sweep: CallSweepReport): string {
  const misses = sweep.levels.filter((l) => !l.held).map((l) => `  ${l.calls} calls missed: ${sweepMisses(l)}`);
  return [textTable(SWEEP_HEADERS, sweepRows(sweep)), '', `${sweepAnswer(sweep)}.`, ...misses].join('\n');
}

function series(sweep: CallSweepReport, name: string, pick: (l: SweepLevel) => number | null): LineSeries {
  return { name, points: sweep.levels.map((l) => [l.calls, pick(l)]) };
}

/** The gateway's series, and the relay's beside it when the sweep ran the relay. */
function withRelay(sweep: CallSweepReport, gateway: (l: SweepLevel) => number | null, relay: (l: SweepLevel) => number | null): LineSeries[] {
  const g = series(sweep, 'gateway', gateway);
  return sweep.settings.relay ? [g, series(sweep, 'relay', relay)] : [g];
}

/** The self-contained page: the answer, the table with each level's verdict, charts over the levels, links to each level's report. */
export function renderSweepHtml(sweep: CallSweepReport): string {
  const s = sweep.settings;
  const settings = `Levels ${s.levels.join(', ')} concurrent calls; each ramps over ${s.rampSec} s and holds ${s.steadySec} s, with ${s.workers} caller process(es)${s.relay ? ' and the bare relay after the gateway' : ', without the relay'}; STT latency ${s.sttLatencyMs} ms. Machine: ${sweep.machine.cpuModel} (${sweep.machine.cpus} CPUs), Node ${sweep.machine.node}.`;
  const rows: Cell[][] = sweepRows(sweep).map((row, i) => row.map((c, j) => (j === 1 ? { text: c, className: sweep.levels[i]!.held ? 'pass' : 'fail' } : c)));
  const links = sweep.levels.map((l) => `<li><a href="${escapeHtml(encodeURIComponent(l.files.html))}">${l.calls} calls</a>: ${escapeHtml(l.held ? 'held' : `missed ${sweepMisses(l)}`)}${l.held && !l.ok ? ', but missed a cost target (CPU against the relay or RSS growth)' : ''}</li>`).join('\n');
  const x = { xLabel: 'concurrent calls' };
  const charts = [
    lineChartSvg([series(sweep, 'p50', (l) => l.turnLatencyMs.p50), series(sweep, 'p95', (l) => l.turnLatencyMs.p95), series(sweep, 'p99', (l) => l.turnLatencyMs.p99)], { ...x, title: 'Turn latency (caller speech end → agent audio)', unit: 'ms' }),
    lineChartSvg(withRelay(sweep, (l) => l.jitterP99Ms, (l) => l.relayJitterP99Ms), { ...x, title: 'Outbound pacing jitter p99', unit: 'ms', target: { value: CALL_TARGETS.jitterP99Ms, label: `target ${CALL_TARGETS.jitterP99Ms} ms` } }),
    lineChartSvg(withRelay(sweep, (l) => l.lateAtCallersPer10k, (l) => l.relayLateAtCallersPer10k), { ...x, title: 'Late frames at the callers', unit: 'per 10k frames' }),
    lineChartSvg(withRelay(sweep, (l) => l.cpuPerCallSecondMs, (l) => l.relayCpuPerCallSecondMs), { ...x, title: 'CPU per call-second (steady state)', unit: 'ms' }),
  ];
  return htmlPage(`Call capacity sweep, ${sweep.startedAt}`, [
    { heading: 'Answer', html: `<p><strong>${escapeHtml(sweepAnswer(sweep))}.</strong></p>\n<p class="muted">A level is held when every call-quality target passed: no failed call, no late frame at the callers or the pacer, pacing jitter p99 ≤ ${CALL_TARGETS.jitterP99Ms} ms, event-loop delay p99 ≤ ${CALL_TARGETS.loopDelayP99Ms} ms, overhead per turn p50 ≤ ${CALL_TARGETS.overheadP50Ms} and p99 ≤ ${CALL_TARGETS.overheadP99Ms} ms, barge-in p95 ≤ ${CALL_TARGETS.bargeInP95Ms} ms. CPU against the relay and RSS growth per call are in the table; they say what the calls cost, not how they went.${s.relay ? ' The relay’s jitter p99 and late frames, beside the gateway’s, are the floor the callers and the machine set at the same calls (the relay echoes frames with no pipeline); they are not part of the verdict either.' : ''}</p>\n<p class="muted">${escapeHtml(settings)}</p>` },
    { heading: 'Levels', html: htmlTable(SWEEP_HEADERS, rows) },
    { heading: 'By concurrent calls', html: `<div class="charts">${charts.map((c) => `<figure>${c}</figure>`).join('\n')}</div>` },
    { heading: "Each level's report", html: `<ul>\n${links}\n</ul>` },
  ]);
}
