import { describe, expect, it } from 'vitest';
import { buildCallReport, cpuAt, failureOf, medianCallMs, planSlots, processFigures, targetRun, withTargets } from '../src/calls/aggregate.js';
import type { TargetInput } from '../src/calls/aggregate.js';
import type { TargetRun } from '../src/calls/call-results.js';
import { DESIGNED_LEAD_GAPS, jitterOf, lateGaps, peakOverlap, speechOnly, steadyGaps, utteranceGaps } from '../src/calls/frame-gaps.js';
import type { CallRecord, GatewayCallEnd } from '../src/calls/ipc.js';
import { ArrivalMap } from '../src/calls/late-gaps.js';
import type { RawSample } from '../src/calls/process-sampler.js';

const MB = 1024 * 1024;
const T0 = 1_000_000;

function record(over: Partial<CallRecord> & { callSid: string }): CallRecord {
  return { slot: 0, dialledAt: T0, connectedAt: T0, endedAt: T0 + 10_000, completed: true, failure: null, turnLatenciesMs: [], framesReceived: 0, frameGapsMs: [], steadyFrameGapsMs: [], protocolErrors: [], ...over };
}

function sample(atS: number, cpuMs: number, rssMb: number, activeCalls = 0, loopP99Ms = 1): RawSample {
  return { at: T0 + atS * 1000, cpuMs, rssBytes: rssMb * MB, activeCalls, loopP99Ms };
}

function turn(totalMs: number, overheadMs: number): GatewayCallEnd['turnMetrics'][number] {
  return { turnId: `t${totalMs}`, endpointingMs: totalMs - overheadMs - 100, sttMs: 300, retrievalMs: 0, llmFirstTokenMs: 60, llmFirstPhraseMs: 10, ttsFirstByteMs: 40, overheadMs, totalMs };
}

describe('frame gaps', () => {
  it('keeps the gaps inside utterances and drops the pauses between them', () => {
    // 0→20→40→61 is one utterance; 61→600 (539 ms) is a pause; 600→620 the next utterance.
    expect(utteranceGaps([0, 20, 40, 61, 600, 620], 500)).toEqual([20, 20, 21, 20]);
    expect(utteranceGaps([5], 500)).toEqual([]);
  });

  it("leaves each utterance's designed lead (burst, grid alignment) out of the steady-state gaps", () => {
    // Pacer-shaped utterances: a 3-frame burst at 0 (gaps 0, 0), the first slot 13 ms later,
    // then one frame per 20 ms; a 600 ms pause; the next utterance the same from 1000.
    const utterance = (t0: number, align: number): number[] => [t0, t0, t0, t0 + align, t0 + align + 20, t0 + align + 40, t0 + align + 61];
    const arrivals = [...utterance(0, 13), ...utterance(1000, 27)];
    expect(DESIGNED_LEAD_GAPS).toBe(3);
    expect(utteranceGaps(arrivals, 500)).toEqual([0, 0, 13, 20, 20, 21, 0, 0, 27, 20, 20, 21]);
    expect(steadyGaps(arrivals, 500)).toEqual([20, 20, 21, 20, 20, 21]);
    // A late frame inside the lead is still late: late frames are counted on every gap.
    expect(steadyGaps([0, 0, 45, 65], 500)).toEqual([]);
    expect(lateGaps(utteranceGaps([0, 0, 45, 65], 500))).toBe(1);
    expect(steadyGaps([0, 20], 500, 0)).toEqual([20]);
  });

  it('counts gaps over 40 ms as late and measures jitter around 20 ms', () => {
    expect(lateGaps([20, 40, 40.5, 100])).toBe(2);
    expect(jitterOf([18, 25, 20])).toEqual([2, 5, 0]);
  });

  it('finds the most calls open at once; a redial touching a hang-up is not an overlap', () => {
    expect(peakOverlap([{ from: 0, to: 10 }, { from: 5, to: 15 }, { from: 10, to: 20 }])).toBe(2);
    expect(peakOverlap([{ from: 0, to: 10 }, { from: 1, to: 9 }, { from: 2, to: 8 }])).toBe(3);
    expect(peakOverlap([{ from: 0, to: 10 }, { from: 10, to: 20 }])).toBe(1);
    expect(peakOverlap([])).toBe(0);
  });

  it('trims silent frames around the speech', () => {
    const silence = new Uint8Array(160).fill(0xff);
    const loud = new Uint8Array(160).fill(0x00); // μ-law 0x00 is full scale
    const clip = new Uint8Array([...silence, ...silence, ...loud, ...loud, ...silence]);
    const trimmed = speechOnly(clip);
    expect(trimmed.byteLength).toBe(320);
    expect(trimmed.every((b) => b === 0x00)).toBe(true);
    // All silence: returned whole.
    expect(speechOnly(silence).byteLength).toBe(160);
  });
});

describe('process figures', () => {
  it('interpolates cumulative CPU between samples and clamps outside them', () => {
    const s = [sample(0, 100, 50), sample(1, 300, 50)];
    expect(cpuAt(s, T0 + 500)).toBe(200);
    expect(cpuAt(s, T0 - 1000)).toBe(100);
    expect(cpuAt(s, T0 + 5000)).toBe(300);
  });

  it('gives CPU per call-second, RSS before and at steady state, and growth per call', () => {
    // Two calls connected 1 s → 5 s and 2 s → 4 s. Steady state 2 s → 4 s: both calls up,
    // 4 call-seconds; CPU at 2 s = 1200 ms, at 4 s = 1500 ms: 0.3 s, 0.075 CPU-second per
    // call-second. The whole run (first connect 1 s → last hang-up 5 s) has 6 call-seconds
    // and 0.6 s of CPU (1000 → 1600 ms): 0.1, the ramp's and tail's dearer seconds included.
    const samples = [sample(0, 900, 100), sample(1, 1000, 100), sample(2, 1200, 110), sample(3, 1300, 130), sample(4, 1500, 120), sample(5, 1600, 140)];
    const records = [record({ callSid: 'CA1', connectedAt: T0 + 1000, endedAt: T0 + 5000 }), record({ callSid: 'CA2', connectedAt: T0 + 2000, endedAt: T0 + 4000 })];
    const window = { startAt: T0, rampEndAt: T0 + 2000, steadyEndAt: T0 + 4000, finishedAt: T0 + 6000 };
    const f = processFigures({ records, samples, steadyLoopDelay: { p50: 1, p99: 5, max: 9 }, window, concurrentCalls: 2 });
    expect(f.cpuWindow).toBe('steady');
    expect(f.callSeconds).toBe(4);
    expect(f.cpuSeconds).toBeCloseTo(0.3, 9);
    expect(f.cpuPerCallSecond).toBeCloseTo(0.075, 9);
    expect(f.wholeRun!.callSeconds).toBe(6);
    expect(f.wholeRun!.cpuSeconds).toBeCloseTo(0.6, 9);
    expect(f.wholeRun!.cpuPerCallSecond).toBeCloseTo(0.1, 9);
    // No call in the steady window (every dial of it failed): the whole run's figure.
    const noSteady = processFigures({ records, samples, steadyLoopDelay: { p50: 1, p99: 5, max: 9 }, window: { ...window, rampEndAt: T0 + 5500, steadyEndAt: T0 + 6000 }, concurrentCalls: 2 });
    expect(noSteady.cpuWindow).toBe('whole-run');
    expect(noSteady.callSeconds).toBe(6);
    expect(noSteady.cpuPerCallSecond).toBeCloseTo(0.1, 9);
    // Last sample at or before the first connect (1 s): 100 MB. Steady samples (2, 3, 4 s): 110, 130, 120 → median 120.
    expect(f.rssBeforeMb).toBe(100);
    expect(f.rssSteadyMb).toBe(120);
    expect(f.rssPeakMb).toBe(140);
    expect(f.rssGrowthPerCallMb).toBe(10);
    expect(f.eventLoopDelay).toEqual({ p50: 1, p99: 5, max: 9 });
    // Per-second CPU: 100 ms over 1 s = 10 %, then 20 %, 10 %, 20 %, 10 %.
    expect(f.samples.map((s) => Math.round(s.cpuPercent))).toEqual([10, 20, 10, 20, 10]);
    expect(f.samples[0]!.t).toBe(1);
  });
});

describe('target run', () => {
  const window = { startAt: T0, rampEndAt: T0 + 1000, steadyEndAt: T0 + 3000, finishedAt: T0 + 12_000 };
  const base = (records: CallRecord[], ends: GatewayCallEnd[]): TargetInput => ({
    target: 'gateway',
    concurrentCalls: 2,
    records,
    gatewayEnds: new Map(ends.map((e) => [e.callSid, e])),
    samples: [sample(0, 0, 100), sample(12, 1200, 100)],
    steadyLoopDelay: { p50: 0.5, p99: 3, max: 8 },
    lateFramesAtGateway: 1,
    window,
    utteranceBreakMs: 500,
    generator: [{ cpuPercent: 12, loopDelayP99Ms: 2 }],
  });

  it('counts calls, failures and the figures of every call', () => {
    const records = [
      record({ callSid: 'CA1', turnLatenciesMs: [600, 700], bargeInReactionMs: 140, framesReceived: 4, frameGapsMs: [0, 20, 45], steadyFrameGapsMs: [20, 45] }),
      record({ callSid: 'CA2', dialledAt: T0 - 250, turnLatenciesMs: [800], bargeInReactionMs: null, framesReceived: 2, frameGapsMs: [19], steadyFrameGapsMs: [] }),
      record({ callSid: 'CA3', connectedAt: null, completed: false, failure: { callSid: 'CA3', kind: 'refused', message: 'HTTP 503' } }),
      record({ callSid: 'CA4', completed: false, failure: { callSid: 'CA4', kind: 'dropped', message: 'closed' } }),
      record({ callSid: 'CA5', connectedAt: null, completed: false, failure: { callSid: 'CA5', kind: 'connect', message: 'timed out' } }),
    ];
    const ends: GatewayCallEnd[] = [
      { callSid: 'CA1', status: 'completed', endReason: 'user_ended', turnMetrics: [turn(600, 10), turn(700, 30)] },
      { callSid: 'CA2', status: 'failed', endReason: 'error', turnMetrics: [turn(800, 20)] },
    ];
    const run: TargetRun = targetRun(base(records, ends));
    expect(run.calls).toEqual({ planned: 5, connected: 3, completed: 1, failed: 4, dropped: 1, refused: 1 });
    // The refused call listed last: under overload there are hundreds, and they would hide the rest.
    expect(run.failures.map((f) => [f.callSid, f.kind])).toEqual([
      ['CA2', 'script'],
      ['CA4', 'dropped'],
      ['CA5', 'connect'],
      ['CA3', 'refused'],
    ]);
    // CA1, CA2 and CA4 all span T0 → T0 + 10 s.
    expect(run.peakConcurrentCalls).toBe(3);
    expect(run.turnLatency).toMatchObject({ count: 3, p50: 700, max: 800 });
    expect(run.stages!.overhead).toMatchObject({ count: 3, p50: 20, p99: 30, mean: 20 });
    expect(run.stages!.llmFirstPhrase).toMatchObject({ count: 3, p50: 10 });
    expect(run.stages!.overheadWithFirstPhrase).toMatchObject({ count: 3, p50: 30, p99: 40, mean: 30 });
    expect(run.stages!.total.count).toBe(3);
    expect(run.bargeInReaction).toMatchObject({ count: 1, p95: 140 });
    expect(run.framePacing).toMatchObject({ frames: 6, lateFramesAtCallers: 1, lateFramesAtGateway: 1, utteranceBreakMs: 500 });
    expect(run.framePacing.gaps).toMatchObject({ count: 4, p50: 19, max: 45 });
    // Jitter on the steady-state gaps only: the 0 ms burst gap is not in it.
    expect(run.framePacing.jitter).toMatchObject({ count: 2, p50: 0, max: 25 });
    expect(run.durationSec).toBe(12);
    // Connected calls: CA2 took 250 ms from dial to open, CA1 and CA4 none.
    expect(run.connect).toMatchObject({ count: 3, p50: 0, max: 250 });
    expect(run.generator).toEqual([{ cpuPercent: 12, loopDelayP99Ms: 2 }]);
    expect(run.notes).toEqual(['1 barge-in(s) got no clear from the gateway', '1 connected call(s) have no end record from the gateway (no stage breakdown for them)']);
  });

  it('sorts the late frames at the callers by what the caller processes read during each gap', () => {
    const records = [record({ callSid: 'CA1', framesReceived: 4, frameGapsMs: [0, 20, 45], steadyFrameGapsMs: [20, 45] })];
    // The one late gap (20 → 65 ms after T0): its caller process read nothing from 21 to 64 ms; the other read a frame every ms.
    const silent = new ArrivalMap(T0);
    for (const t of [0, 20, 65]) silent.mark(T0 + t);
    const reading = new ArrivalMap(T0);
    for (let t = 0; t < 100; t++) reading.mark(T0 + t);
    const callerArrivals = [
      { lateGaps: [{ from: T0 + 20, to: T0 + 65 }], arrivals: silent },
      { lateGaps: [], arrivals: reading },
    ];
    const run = targetRun({ ...base(records, []), callerArrivals });
    expect(run.framePacing.lateFramesAtCallers).toBe(1);
    expect(run.framePacing.lateAtCallersWhere).toEqual({ othersArrived: 0, thisCallerSilent: 1, allCallersSilent: 0 });
    // Without the processes' arrivals (a caller process from before), the figure is left out.
    expect(targetRun(base(records, [])).framePacing.lateAtCallersWhere).toBeUndefined();
  });

  it('takes the gateway\'s failed verdict only when the caller saw none', () => {
    const end: GatewayCallEnd = { callSid: 'CA1', status: 'failed', endReason: 'error', turnMetrics: [] };
    expect(failureOf(record({ callSid: 'CA1' }), end)).toEqual({ callSid: 'CA1', kind: 'script', message: 'the gateway ended the call as failed (error)' });
    const own = { callSid: 'CA1', kind: 'dropped' as const, message: 'x' };
    expect(failureOf(record({ callSid: 'CA1', failure: own }), end)).toBe(own);
    expect(failureOf(record({ callSid: 'CA1' }), { ...end, status: 'completed' })).toBeNull();
  });

  it('relates the gateway to the relay: CPU ratio and capacity at 60 % of the cores', () => {
    const gw = targetRun(base([record({ callSid: 'CA1' })], []));
    // The call spans 0 → 10 s; CPU rises 1200 ms over 12 s, so 1.0 CPU-s over 10 call-s = 0.1.
    // The relay at 0.04: ratio 2.5; capacity floor(2 × 0.6 / 0.1) = 12.
    const relay: TargetRun = { ...gw, target: 'relay', process: { ...gw.process, cpuPerCallSecond: 0.04 } };
    const report = buildCallReport({ startedAt: new Date(T0), settings: { calls: 1, rampSec: 1, steadySec: 2, workers: 1, sttLatencyMs: 0, relay: true, pipelineThreads: 1, admission: null, gatewayNodeFlags: [], script: [] }, machine: { cpus: 2, cpuModel: 'x', node: 'v20', platform: 'linux', arch: 'x64' }, cores: 2, gateway: gw, relay });
    expect(gw.process.cpuPerCallSecond).toBeCloseTo(0.1, 9);
    expect(report.cpuRatioToRelay).toBeCloseTo(2.5, 9);
    expect(report.capacity).toEqual({ cores: 2, cpuBudgetPercent: 60, calls: 12 });
    expect(buildCallReport({ ...report, startedAt: new Date(T0), cores: 2, gateway: gw, relay: null }).cpuRatioToRelay).toBeNull();

    expect(withTargets(report, [{ name: 'a', limit: '', measured: '', pass: true }, { name: 'b', limit: '', measured: '-', pass: null }]).ok).toBe(true);
    expect(withTargets(report, [{ name: 'a', limit: '', measured: '', pass: false }]).ok).toBe(false);
    const failing = { ...report, gateway: { ...gw, calls: { ...gw.calls, failed: 1 } } };
    expect(withTargets(failing, []).ok).toBe(false);
  });
});

describe('plan', () => {
  it('starts the slots evenly over the ramp and deals them round-robin', () => {
    const shares = planSlots(5, 2, 1000, 1000);
    expect(shares).toEqual([
      [{ index: 0, startAt: 1000 }, { index: 2, startAt: 1400 }, { index: 4, startAt: 1800 }],
      [{ index: 1, startAt: 1200 }, { index: 3, startAt: 1600 }],
    ]);
  });

  it('takes the median connected duration of completed calls', () => {
    const rs = [
      record({ callSid: 'a', connectedAt: 0, endedAt: 10 }),
      record({ callSid: 'b', connectedAt: 0, endedAt: 30 }),
      record({ callSid: 'c', connectedAt: 0, endedAt: 20 }),
      record({ callSid: 'd', connectedAt: 0, endedAt: 99, completed: false }),
    ];
    expect(medianCallMs(rs)).toBe(20);
    expect(medianCallMs([])).toBeNull();
  });
});
