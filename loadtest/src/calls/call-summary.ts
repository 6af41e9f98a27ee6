/**
 * A short plain-text summary of a call benchmark: the figures a person checks first. The
 * full table, target checks and HTML report are call-report.ts's.
 */
import { fixed, textTable } from '../report.js';
import type { CallBenchReport, Distribution, TargetRun } from './call-results.js';

const dist = (d: Distribution): string[] => [String(d.count), fixed(d.p50, 0), fixed(d.p95, 0), fixed(d.p99, 0), fixed(d.max, 0)];

function targetLines(run: TargetRun): string[] {
  const c = run.calls;
  const p = run.process;
  const rows: string[][] = [['turn latency (caller)', ...dist(run.turnLatency)]];
  if (run.stages) {
    rows.push(
      ['  endpointing', ...dist(run.stages.endpointing)],
      ['  stt', ...dist(run.stages.stt)],
      ['  llm first token', ...dist(run.stages.llmFirstToken)],
      ['  tts first byte', ...dist(run.stages.ttsFirstByte)],
      ['  overhead (ours)', ...dist(run.stages.overhead)],
      ['  total (gateway)', ...dist(run.stages.total)],
    );
    rows.push(['barge-in reaction', ...dist(run.bargeInReaction)]);
  }
  rows.push(['frame gap', ...[String(run.framePacing.gaps.count), fixed(run.framePacing.gaps.p50, 1), fixed(run.framePacing.gaps.p95, 1), fixed(run.framePacing.gaps.p99, 1), fixed(run.framePacing.gaps.max, 1)]]);
  rows.push(['pacing jitter', ...[String(run.framePacing.jitter.count), fixed(run.framePacing.jitter.p50, 1), fixed(run.framePacing.jitter.p95, 1), fixed(run.framePacing.jitter.p99, 1), fixed(run.framePacing.jitter.max, 1)]]);
  const gen = run.generator ?? [];
  return [
    `${run.target}: ${c.planned} calls dialled, ${c.connected} connected, ${c.completed} completed, ${c.failed} failed (${c.dropped} dropped); peak ${run.peakConcurrentCalls} concurrent; ${fixed(run.durationSec, 0)} s`,
    textTable(['ms', 'n', 'p50', 'p95', 'p99', 'max'], rows),
    `  frames ${run.framePacing.frames}, late at callers ${run.framePacing.lateFramesAtCallers}, late at gateway ${run.framePacing.lateFramesAtGateway ?? '-'}`,
    `  process: CPU ${fixed(p.cpuSeconds, 1)} s over ${fixed(p.callSeconds, 0)} call-s = ${fixed(p.cpuPerCallSecond === null ? null : p.cpuPerCallSecond * 1000, 2)} ms CPU per call-s; ` +
      `RSS ${fixed(p.rssBeforeMb, 0)} → ${fixed(p.rssSteadyMb, 0)} MB (peak ${fixed(p.rssPeakMb, 0)}, ${fixed(p.rssGrowthPerCallMb, 2)} MB/call); loop delay p99 ${fixed(p.eventLoopDelay.p99, 1)} ms, max ${fixed(p.eventLoopDelay.max, 1)} ms`,
    ...(run.simulators ? [`  simulators: CPU ${fixed(run.simulators.cpuPercent, 0)} %, loop p99 ${fixed(run.simulators.loopDelayP99Ms, 1)} ms`] : []),
    `  callers: ${gen.map((g, i) => `#${i + 1} CPU ${fixed(g.cpuPercent, 0)} %, loop p99 ${fixed(g.loopDelayP99Ms, 1)} ms`).join('; ') || '-'}`,
    ...run.failures.slice(0, 5).map((f) => `  FAILED ${f.callSid} ${f.kind}: ${f.message}`),
    ...(run.notes ?? []).map((n) => `  note: ${n}`),
  ];
}

/** The summary, one target after the other, then the ratio and capacity. */
export function formatCallSummary(report: CallBenchReport): string {
  const s = report.settings;
  return [
    `Call benchmark: ${s.calls} concurrent calls, ${s.rampSec} s ramp, ${s.steadySec} s steady, ${s.workers} caller process(es), STT latency ${s.sttLatencyMs} ms`,
    '',
    ...targetLines(report.gateway),
    ...(report.relay ? ['', ...targetLines(report.relay)] : []),
    '',
    `CPU per call-second, gateway / relay: ${fixed(report.cpuRatioToRelay, 2)}x; capacity at ${report.capacity.cpuBudgetPercent} % of ${report.capacity.cores} cores: ${report.capacity.calls ?? '-'} calls`,
  ].join('\n');
}
