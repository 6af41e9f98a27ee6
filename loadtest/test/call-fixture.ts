/**
 * A call-bench report of a good run at 200 calls (every target passed), and a figure with no
 * samples, for the report, HTML and sweep tests to change one figure at a time.
 */
import type { CallBenchReport, Measured, ProcessSample, TargetRun } from '../src/calls/call-results.js';

/** A measured figure whose histogram holds `count` samples spread over its buckets. */
function measured(p50: number, p95: number, p99: number, max: number, upperBounds: number[], counts: number[]): Measured {
  const count = counts.reduce((a, b) => a + b, 0);
  return { count, p50, p95, p99, max, mean: (p50 + p95) / 2, histogram: { upperBounds, counts } };
}

export const none: Measured = { count: 0, p50: null, p95: null, p99: null, max: null, mean: null, histogram: { upperBounds: [10], counts: [0, 0] } };

function samples(activeCalls: number, cpuPercent: number, rssMb: number): ProcessSample[] {
  return Array.from({ length: 40 }, (_, t) => ({ t, activeCalls: t < 10 ? Math.round((activeCalls * t) / 10) : activeCalls, cpuPercent: t < 10 ? (cpuPercent * t) / 10 : cpuPercent, rssMb: rssMb + Math.min(t, 10) * 4, loopDelayP99Ms: 11 + (t % 3) }));
}

function gatewayRun(): TargetRun {
  return {
    target: 'gateway',
    calls: { planned: 200, connected: 200, completed: 200, failed: 0, dropped: 0, refused: 0 },
    failures: [],
    peakConcurrentCalls: 200,
    turnLatency: measured(640, 910, 1080, 1320, [200, 400, 600, 800, 1000, 1500], [0, 12, 410, 380, 150, 48, 0]),
    stages: {
      endpointing: measured(420, 520, 560, 610, [100, 300, 500, 700], [0, 40, 820, 140, 0]),
      stt: measured(2, 4, 6, 9, [1, 2, 5, 10], [100, 480, 400, 20, 0]),
      llmFirstToken: measured(120, 210, 260, 300, [50, 100, 200, 300], [0, 300, 640, 60, 0]),
      llmFirstPhrase: measured(10, 20, 25, 30, [5, 10, 20, 50], [0, 500, 400, 100, 0]),
      ttsFirstByte: measured(80, 130, 170, 190, [50, 100, 200], [10, 690, 300, 0]),
      overhead: measured(4.2, 9.5, 21.4, 27.9, [1, 2, 5, 10, 20, 30, 50], [0, 40, 700, 220, 30, 10, 0, 0]),
      overheadWithFirstPhrase: measured(14.2, 29.5, 46.4, 57.9, [10, 20, 50, 100], [0, 500, 400, 100, 0]),
      total: measured(630, 900, 1070, 1310, [200, 400, 600, 800, 1000, 1500], [0, 10, 420, 380, 142, 48, 0]),
    },
    bargeInReaction: measured(96, 138, 149, 162, [50, 75, 100, 125, 150, 175], [0, 12, 98, 60, 28, 2, 0]),
    framePacing: {
      frames: 1_204_000,
      gaps: measured(20, 21.2, 22.8, 31.5, [10, 18, 19, 20, 21, 22, 25, 30, 40], [3, 40, 6000, 700_000, 400_000, 90_000, 7_900, 40, 17, 0]),
      jitter: measured(0.3, 1.2, 2.8, 11.5, [0.5, 1, 2, 3, 5, 10, 20], [800_000, 300_000, 90_000, 13_000, 940, 50, 10, 0]),
      lateFramesAtCallers: 0,
      lateFramesAtGateway: 0,
      gapsAtGateway: { count: 1_000_000, within5Ms: 996_200 },
      utteranceBreakMs: 200,
    },
    process: {
      cpuSeconds: 41.6,
      callSeconds: 8000,
      cpuPerCallSecond: 0.0052,
      cpuWindow: 'steady',
      wholeRun: { cpuSeconds: 52.2, callSeconds: 9000, cpuPerCallSecond: 0.0058 },
      rssBeforeMb: 92,
      rssSteadyMb: 132,
      rssPeakMb: 141,
      rssGrowthPerCallMb: 0.2,
      eventLoopDelay: { p50: 10.4, p99: 13.1, max: 24.9 },
      samples: samples(200, 104, 92),
    },
    durationSec: 52,
    cpuSplit: { loop: 0.5, pipelineThreads: 0.4, other: 0.1 },
  };
}

function relayRun(): TargetRun {
  return {
    ...gatewayRun(),
    target: 'relay',
    turnLatency: none,
    stages: null,
    bargeInReaction: none,
    framePacing: { ...gatewayRun().framePacing, lateFramesAtGateway: null },
    process: { ...gatewayRun().process, cpuSeconds: 24, cpuPerCallSecond: 0.003, wholeRun: { cpuSeconds: 26, callSeconds: 8000, cpuPerCallSecond: 0.00325 }, rssGrowthPerCallMb: 0.05, samples: samples(200, 60, 70) },
    cpuSplit: undefined,
  };
}

export function fixture(): CallBenchReport {
  return {
    kind: 'call-bench',
    startedAt: '2026-11-21T18:00:00.000Z',
    settings: { calls: 200, rampSec: 10, steadySec: 30, workers: 2, sttLatencyMs: 0, relay: true, pipelineThreads: 1, admission: { maxCalls: 0, overloadLagMs: 500 }, gatewayNodeFlags: [], script: ['Hi, a table for two tonight?', 'Eight o’clock & by the window', '(barge-in) Actually, make it four'] },
    machine: { cpus: 2, cpuModel: 'Test CPU @ 2.0GHz', node: 'v20.19.0', platform: 'linux', arch: 'x64' },
    gateway: gatewayRun(),
    relay: relayRun(),
    cpuRatioToRelay: 0.0052 / 0.003,
    capacity: { cores: 2, cpuBudgetPercent: 60, calls: (2 * 0.6) / 0.0052 },
    targets: [],
    ok: true,
  };
}
