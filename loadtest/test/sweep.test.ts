import { describe, expect, it } from 'vitest';
import { withTargets } from '../src/calls/aggregate.js';
import { checkTargets } from '../src/calls/call-report.js';
import type { CallBenchReport } from '../src/calls/call-results.js';
import { SWEEP_HEADERS, buildSweepReport, formatSweepTable, renderSweepHtml, sweepAnswer, sweepLevel, sweepMisses, sweepRows } from '../src/calls/sweep.js';
import type { CallSweepReport, SweepLevel } from '../src/calls/sweep.js';
import { fixture } from './call-fixture.js';
import { markupProblems, occurrences } from './html-markup.js';

const machine = fixture().machine;
const settings = { levels: [50, 100, 150], rampSec: 10, steadySec: 30, workers: 2, relay: true, sttLatencyMs: 0 };

/** The fixture (a good run at 200 calls) at `calls`, changed by `edit`, its targets checked as a run's are. */
function reportAt(calls: number, edit: (r: CallBenchReport) => void = () => {}): CallBenchReport {
  const r = fixture();
  r.settings.calls = calls;
  r.gateway.peakConcurrentCalls = calls;
  edit(r);
  return withTargets(r, checkTargets(r));
}

function levelAt(calls: number, edit?: (r: CallBenchReport) => void): SweepLevel {
  return sweepLevel(reportAt(calls, edit), { json: `/out/calls-${calls}.json`, html: `/out/calls-${calls}.html` });
}

function sweepOf(levels: SweepLevel[], levelsPlanned = settings.levels): CallSweepReport {
  return buildSweepReport({ startedAt: new Date('2026-12-07T12:00:00Z'), settings: { ...settings, levels: levelsPlanned }, machine, levels });
}

const late = (n: number) => (r: CallBenchReport) => (r.gateway.framePacing.lateFramesAtCallers = n);
const slowBargeIn = (r: CallBenchReport) => (r.gateway.bargeInReaction.p95 = 151);

describe('sweepLevel', () => {
  it('takes a level’s figures from its report, CPU in ms per call-second and files by name', () => {
    const l = levelAt(200);
    expect(l).toMatchObject({ calls: 200, peakConcurrentCalls: 200, held: true, missed: [], ok: true, plannedCalls: 200, failedCalls: 0, turnLatencyMs: { p50: 640, p95: 910, p99: 1080 }, overheadP99Ms: 21.4, bargeInP95Ms: 138, jitterP99Ms: 2.8, relayJitterP99Ms: 2.8, lateAtCallers: 0, lateAtCallersPer10k: 0, relayLateAtCallersPer10k: 0, lateAtPacer: 0, loopDelayP99Ms: 13.1, rssGrowthPerCallMb: 0.2, files: { json: 'calls-200.json', html: 'calls-200.html' } });
    expect(l.cpuPerCallSecondMs).toBeCloseTo(5.2, 9);
    expect(l.relayCpuPerCallSecondMs).toBeCloseTo(3, 9);
    expect(l.cpuRatioToRelay).toBeCloseTo(5.2 / 3, 9);
  });

  it('takes the relay’s pacing from the relay’s run, and has none without the relay', () => {
    const l = levelAt(200, (r) => {
      r.relay!.framePacing.jitter.p99 = 7.5;
      r.relay!.framePacing.lateFramesAtCallers = 30;
      r.relay!.framePacing.frames = 60_000;
    });
    expect(l.relayJitterP99Ms).toBe(7.5);
    expect(l.relayLateAtCallersPer10k).toBe(5);
    // The relay's pacing is not part of the verdict.
    expect(l.held).toBe(true);
    const alone = levelAt(200, (r) => {
      r.relay = null;
      r.cpuRatioToRelay = null;
    });
    expect(alone).toMatchObject({ relayJitterP99Ms: null, relayLateAtCallersPer10k: null, relayCpuPerCallSecondMs: null });
  });

  it('is not held when a call-quality target fails, and names each one missed', () => {
    const l = levelAt(100, (r) => {
      late(3)(r);
      slowBargeIn(r);
    });
    expect(l.held).toBe(false);
    expect(l.missed).toEqual(['late frames at the callers (gap > 40 ms)', 'barge-in reaction p95']);
    expect(l.ok).toBe(false);
  });

  it('is held when only a cost target misses (CPU against the relay, RSS growth), but not ok', () => {
    const l = levelAt(100, (r) => {
      r.cpuRatioToRelay = 2.7;
      r.gateway.process.rssGrowthPerCallMb = 1.5;
    });
    expect(l.held).toBe(true);
    expect(l.missed).toEqual([]);
    expect(l.ok).toBe(false);
    const html = renderSweepHtml(sweepOf([l], [100]));
    expect(html).toContain('<a href="calls-100.html">100 calls</a>: held, but missed a cost target (CPU against the relay or RSS growth)</li>');
    expect(renderSweepHtml(sweepOf([levelAt(100)], [100]))).toContain('<a href="calls-100.html">100 calls</a>: held</li>');
  });

  it('leaves out barge-in when it is not judged (the STT slowed), and counts a failed call', () => {
    const judgedOut = levelAt(100, (r) => {
      r.settings.sttLatencyMs = 300;
      slowBargeIn(r);
    });
    expect(judgedOut.held).toBe(true);
    const failed = levelAt(100, (r) => {
      r.gateway.calls.failed = 1;
      r.gateway.calls.refused = 1;
    });
    expect(failed.missed).toEqual(['failed calls']);
    expect(failed.failedCalls).toBe(1);
  });
});

describe('buildSweepReport', () => {
  it('holds up to the last level when every level held', () => {
    const s = sweepOf([levelAt(50), levelAt(100), levelAt(150)]);
    expect(s.heldUpTo).toBe(150);
    expect(s.firstNotHeld).toBeNull();
    expect(sweepAnswer(s)).toBe('Held up to 150 concurrent calls (the highest level tried: the limit may be higher), at turn latency p50 640 ms, p95 910 ms');
  });

  it('stops at the first level not held, even when a higher one held again', () => {
    const s = sweepOf([levelAt(50), levelAt(100, late(2)), levelAt(150)]);
    expect(s.heldUpTo).toBe(50);
    expect(s.firstNotHeld).toEqual({ calls: 100, missed: ['late frames at the callers (gap > 40 ms)'] });
    expect(sweepAnswer(s)).toBe('Held up to 50 concurrent calls, at turn latency p50 640 ms, p95 910 ms; 100 calls missed late frames at the callers (gap > 40 ms)');
  });

  it('holds nothing when the first level was not held', () => {
    const s = sweepOf([levelAt(50, slowBargeIn), levelAt(100)]);
    expect(s.heldUpTo).toBeNull();
    expect(sweepAnswer(s)).toBe('Not held even at the first level: 50 calls missed barge-in reaction p95 (2 of 3 levels ran)');
  });

  it('says how many levels ran when the sweep was cut short, and when none did', () => {
    expect(sweepAnswer(sweepOf([levelAt(50)]))).toBe('Held up to 50 concurrent calls, at turn latency p50 640 ms, p95 910 ms (1 of 3 levels ran)');
    expect(sweepAnswer(sweepOf([]))).toBe('No level ran (0 of 3 levels ran)');
  });
});

describe('the sweep’s table and page', () => {
  const sweep = sweepOf([
    levelAt(50),
    levelAt(100, (r) => {
      late(7)(r);
      r.gateway.framePacing.jitter.p99 = 6.25;
      r.gateway.peakConcurrentCalls = 98;
      r.relay!.framePacing.jitter.p99 = 4.5;
      r.relay!.framePacing.lateFramesAtCallers = 12;
      r.relay!.framePacing.frames = 80_000;
    }),
  ], [50, 100]);

  it('has one row per level with the headers’ figures', () => {
    const rows = sweepRows(sweep);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toHaveLength(SWEEP_HEADERS.length);
    expect(rows[0]).toEqual(['50', 'yes', '0 of 200', '640 / 910', '21', '138', '2.80', '2.80', '0 (0.00)', '0.00', '0', '13.1', '5.20', '1.73', '0.200']);
    expect(rows[1]!.slice(0, 2)).toEqual(['100 (reached 98)', 'no']);
    expect(rows[1]!.slice(6, 10)).toEqual(['6.25', '4.50', '7 (0.06)', '1.50']);
  });

  it('prints the table, the answer and each level’s misses', () => {
    const out = formatSweepTable(sweep);
    expect(out).toMatch(/^calls +held +failed +turn latency p50 \/ p95 ms/m);
    expect(out).toContain('Held up to 50 concurrent calls, at turn latency p50 640 ms, p95 910 ms; 100 calls missed late frames at the callers (gap > 40 ms), outbound pacing jitter p99 (steady state).');
    expect(out).toContain('  100 calls missed: late frames at the callers (gap > 40 ms); outbound pacing jitter p99 (steady state) (the bare relay at 100 calls: jitter p99 4.50 ms, 1.50 late frames per 10k)');
  });

  it('says how many late frames at the callers a held caller process read late, with or without the relay', () => {
    const where = (held: number) => (r: CallBenchReport) => {
      late(7)(r);
      r.gateway.framePacing.lateAtCallersWhere = { othersArrived: 7 - held - 1, thisCallerSilent: held, allCallersSilent: 1 };
    };
    const l = levelAt(100, where(4));
    expect(l.lateAtCallersWhere).toEqual({ othersArrived: 2, thisCallerSilent: 4, allCallersSilent: 1 });
    expect(sweepMisses(l)).toBe('late frames at the callers (gap > 40 ms) (4 of the 7 late frames at the callers read late by a held caller process; the bare relay at 100 calls: jitter p99 2.80 ms, 0.00 late frames per 10k)');
    const alone = levelAt(100, (r) => {
      where(4)(r);
      r.relay = null;
      r.cpuRatioToRelay = null;
    });
    expect(sweepMisses(alone)).toBe('late frames at the callers (gap > 40 ms) (4 of the 7 late frames at the callers read late by a held caller process)');
    // None read late by a held caller process: nothing said of it.
    expect(sweepMisses(levelAt(100, where(0)))).toBe('late frames at the callers (gap > 40 ms) (the bare relay at 100 calls: jitter p99 2.80 ms, 0.00 late frames per 10k)');
    // Late frames at the callers that were not a miss of their own are not explained (here jitter alone missed).
    const jitterOnly = levelAt(100, (r) => {
      r.gateway.framePacing.jitter.p99 = 6;
      r.gateway.framePacing.lateAtCallersWhere = { othersArrived: 0, thisCallerSilent: 3, allCallersSilent: 0 };
    });
    expect(sweepMisses(jitterOnly)).toBe('outbound pacing jitter p99 (steady state) (the bare relay at 100 calls: jitter p99 2.80 ms, 0.00 late frames per 10k)');
  });

  it('sets the relay’s pacing beside a pacing miss only: not beside other misses, nor without the relay', () => {
    const slow = sweepOf([levelAt(50, slowBargeIn)], [50]);
    expect(formatSweepTable(slow).endsWith('  50 calls missed: barge-in reaction p95')).toBe(true);
    const noRelay = buildSweepReport({
      startedAt: new Date('2026-12-07T12:00:00Z'),
      settings: { ...settings, levels: [50], relay: false },
      machine,
      levels: [levelAt(50, (r) => {
        late(4)(r);
        r.relay = null;
        r.cpuRatioToRelay = null;
      })],
    });
    expect(formatSweepTable(noRelay).endsWith('  50 calls missed: late frames at the callers (gap > 40 ms)')).toBe(true);
    expect(noRelay.levels[0]!.lateAtCallersWhere).toBeNull();
    expect(sweepRows(noRelay)[0]!.slice(6, 10)).toEqual(['2.80', '-', '4 (0.03)', '-']);
    // Without the relay, each chart draws the gateway alone.
    const html = renderSweepHtml(noRelay);
    expect(occurrences(html, '<title>relay</title>')).toBe(0);
    expect(html).not.toContain('The relay’s jitter p99');
  });

  it('renders a well-formed page: the answer, the table with verdicts, four charts and a link to each level', () => {
    const html = renderSweepHtml(sweep);
    expect(markupProblems(html)).toEqual([]);
    expect(html).toContain('<strong>Held up to 50 concurrent calls');
    expect(occurrences(html, '<td class="pass">yes</td>')).toBe(1);
    expect(occurrences(html, '<td class="fail">no</td>')).toBe(1);
    expect(occurrences(html, '<svg')).toBe(4);
    // The jitter chart draws the target.
    expect(html).toContain('target 5 ms');
    expect(html).toContain('<a href="calls-50.html">50 calls</a>: held');
    expect(html).toContain('<a href="calls-100.html">100 calls</a>: missed late frames at the callers (gap &gt; 40 ms); outbound pacing jitter p99 (steady state) (the bare relay at 100 calls: jitter p99 4.50 ms, 1.50 late frames per 10k)</li>');
    // The jitter, late-frame and CPU charts each draw the relay beside the gateway.
    expect(occurrences(html, '<title>relay</title>')).toBe(3);
    expect(html).toContain('The relay’s jitter p99 and late frames, beside the gateway’s, are the floor the callers and the machine set');
    expect(html).toContain('Levels 50, 100 concurrent calls; each ramps over 10 s and holds 30 s');
  });
});
