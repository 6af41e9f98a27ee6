import { describe, expect, it } from 'vitest';
import type { CallBenchReport, TargetCheck } from '../src/calls/call-results.js';
import { checkTargets, formatCallTable, renderCallReportHtml } from '../src/calls/call-report.js';
import { latePer10k, latePer10kText, withinShare } from '../src/calls/frame-gaps.js';
import { fixture, none } from './call-fixture.js';
import { markupProblems, occurrences } from './html-markup.js';

function check(report: CallBenchReport, prefix: string): TargetCheck {
  const found = checkTargets(report).find((t) => t.name.startsWith(prefix));
  if (!found) throw new Error(`no target ${prefix}`);
  return found;
}

/** `fixture()` changed by `edit`. */
function withEdit(edit: (r: CallBenchReport) => void): CallBenchReport {
  const r = fixture();
  edit(r);
  return r;
}

describe('checkTargets', () => {
  it('passes every target of a good run, with the capacity line informational', () => {
    const targets = checkTargets(fixture());
    expect(targets).toHaveLength(12);
    expect(targets.slice(0, 10).map((t) => [t.name, t.pass])).toEqual(targets.slice(0, 10).map((t) => [t.name, true]));
    expect(targets[10]).toEqual({ name: 'implied capacity at 60 % of 2 cores (informational)', limit: 'aim 1000 calls', measured: '231 calls', pass: null });
    expect(targets[11]).toEqual({ name: 'overhead + LLM first-phrase wait p50 / p99 (informational)', limit: '-', measured: '14 / 46 ms', pass: null });
  });

  it.each([
    ['barge-in reaction p95', (r: CallBenchReport, v: number) => (r.gateway.bargeInReaction.p95 = v), 150, 149, 151],
    ['outbound pacing jitter p99 (steady state)', (r: CallBenchReport, v: number) => (r.gateway.framePacing.jitter.p99 = v), 5, 4.99, 5.01],
    ['gateway event-loop delay p99', (r: CallBenchReport, v: number) => (r.gateway.process.eventLoopDelay.p99 = v), 20, 19.9, 20.1],
    ['overhead per turn p50', (r: CallBenchReport, v: number) => (r.gateway.stages!.overhead.p50 = v), 10, 9.9, 10.1],
    ['overhead per turn p99', (r: CallBenchReport, v: number) => (r.gateway.stages!.overhead.p99 = v), 30, 29, 31],
    ['gateway RSS growth per call', (r: CallBenchReport, v: number) => (r.gateway.process.rssGrowthPerCallMb = v), 1, 0.99, 1.01],
    ['gateway CPU per call-second', (r: CallBenchReport, v: number) => (r.cpuRatioToRelay = v), 2, 1.99, 2.01],
  ])('%s passes at and under its limit and fails just over it', (name, set, limit, under, over) => {
    expect(check(withEdit((r) => set(r, limit)), name).pass).toBe(true);
    expect(check(withEdit((r) => set(r, under)), name).pass).toBe(true);
    const failed = check(
      withEdit((r) => set(r, over)),
      name,
    );
    expect(failed.pass).toBe(false);
    expect(failed.measured).toContain(String(over));
  });

  it('fails on one failed call (dropped ones are counted among the failed) and says how many dropped', () => {
    const one = withEdit((r) => {
      r.gateway.calls.failed = 1;
      r.gateway.calls.dropped = 1;
      r.gateway.calls.completed = 199;
    });
    expect(check(one, 'failed calls')).toEqual({ name: 'failed calls', limit: '= 0', measured: '1 failed (1 of them dropped) of 200', pass: false });
    expect(check(withEdit((r) => (r.gateway.calls.failed = 1)), 'failed calls').pass).toBe(false);
  });

  it('counts calls the gateway refused with 503 as failed, and says how many', () => {
    const refused = withEdit((r) => {
      r.gateway.calls = { planned: 230, connected: 200, completed: 199, failed: 31, dropped: 0, refused: 30 };
    });
    expect(check(refused, 'failed calls')).toEqual({ name: 'failed calls', limit: '= 0', measured: '31 failed (0 of them dropped, 30 refused with 503) of 230', pass: false });
    expect(formatCallTable(refused)).toMatch(/refused[\s\S]*gateway +230 +200 +199 +31 +0 +30 /);
  });

  it('gives late frames at the callers per 10k frames, the relay\'s beside them when it ran', () => {
    const report = withEdit((r) => {
      r.gateway.framePacing.frames = 200_000;
      r.gateway.framePacing.lateFramesAtCallers = 187;
      r.relay!.framePacing.frames = 600_000;
      r.relay!.framePacing.lateFramesAtCallers = 612;
    });
    const line = check(report, 'late frames at the callers');
    expect(line.measured).toBe('187 (9.35 per 10k; relay 10.20 per 10k)');
    expect(line.pass).toBe(false);
    expect(formatCallTable(report)).toMatch(/relay\s+600000\s+612\s+10\.20\s+-/);
    expect(renderCallReportHtml(report)).toContain('187 late at the callers (9.35 per 10k)');
    const noRelay = withEdit((r) => {
      r.relay = null;
      r.gateway.framePacing.frames = 0;
    });
    expect(check(noRelay, 'late frames at the callers').measured).toBe('0 (-)');
    // Those a held caller process read late are named, and still counted.
    const held = withEdit((r) => {
      r.relay = null;
      r.gateway.framePacing.frames = 200_000;
      r.gateway.framePacing.lateFramesAtCallers = 14;
      r.gateway.framePacing.lateAtCallersWhere = { othersArrived: 0, thisCallerSilent: 12, allCallersSilent: 2 };
    });
    expect(check(held, 'late frames at the callers')).toMatchObject({ measured: '14 (0.70 per 10k; 12 read late by a held caller process)', pass: false });
    expect(latePer10k(3, 0)).toBeNull();
    expect(latePer10kText(1, 4000)).toBe('2.50 per 10k');
  });

  it('fails on one late frame at the callers or at the gateway pacer', () => {
    expect(check(withEdit((r) => (r.gateway.framePacing.lateFramesAtCallers = 1)), 'late frames at the callers').pass).toBe(false);
    expect(check(withEdit((r) => (r.gateway.framePacing.lateFramesAtGateway = 1)), 'late frames at the gateway').pass).toBe(false);
    expect(check(withEdit((r) => (r.gateway.framePacing.lateFramesAtGateway = null)), 'late frames at the gateway')).toMatchObject({ measured: '-', pass: null });
  });

  it('leaves the CPU ratio unjudged (null) when the relay did not run', () => {
    const r = withEdit((x) => {
      x.relay = null;
      x.cpuRatioToRelay = null;
    });
    expect(check(r, 'gateway CPU per call-second')).toEqual({ name: 'gateway CPU per call-second ÷ relay', limit: '<= 2x', measured: '-', pass: null });
  });

  it('computes the CPU ratio from both runs when the report left it null', () => {
    const c = check(
      withEdit((r) => {
        r.cpuRatioToRelay = null;
        r.relay!.process.cpuPerCallSecond = 0.0025;
      }),
      'gateway CPU per call-second',
    );
    expect(c).toMatchObject({ measured: '2.08 (steady state; whole run 1.78)', pass: false });
  });

  it('judges the steady-state ratio and shows the whole run beside it', () => {
    // 5.2 / 3.0 at steady state; 5.8 / 3.25 over the whole runs.
    expect(check(fixture(), 'gateway CPU per call-second')).toEqual({ name: 'gateway CPU per call-second ÷ relay', limit: '<= 2x', measured: '1.73 (steady state; whole run 1.78)', pass: true });
    // A report written before the steady window: its one figure, unlabelled.
    const older = withEdit((r) => {
      for (const run of [r.gateway, r.relay!]) {
        delete run.process.cpuWindow;
        delete run.process.wholeRun;
      }
    });
    expect(check(older, 'gateway CPU per call-second').measured).toBe('1.73');
  });

  it('does not judge figures that have no samples', () => {
    const r = withEdit((x) => {
      x.gateway.stages = null;
      x.gateway.bargeInReaction = none;
      x.gateway.process.rssGrowthPerCallMb = null;
      x.capacity.calls = null;
    });
    for (const name of ['overhead per turn p50', 'overhead per turn p99', 'barge-in reaction p95', 'gateway RSS growth per call', 'implied capacity']) {
      expect(check(r, name)).toMatchObject({ measured: '-', pass: null });
    }
  });

  it('does not judge barge-in reaction when the simulated STT had latency', () => {
    const c = check(
      withEdit((r) => {
        r.settings.sttLatencyMs = 80;
        r.gateway.bargeInReaction.p95 = 231;
      }),
      'barge-in',
    );
    expect(c.pass).toBeNull();
    expect(c.measured).toBe('231.0 ms (STT latency 80 ms; target needs 0)');
  });
});

describe('formatCallTable', () => {
  it('prints the distributions, stages, pacing, both processes and the targets', () => {
    const out = formatCallTable(fixture());
    expect(out).toMatch(/turn latency \(speech end → agent audio\)\s+1000\s+640\.0\s+910\.0\s+1080\.0\s+1320\.0/);
    expect(out).toMatch(/our overhead\s+1000\s+4\.2\s+9\.5\s+21\.4\s+27\.9/);
    expect(out).toMatch(/LLM first phrase\s+1000\s+10\.0\s+20\.0\s+25\.0\s+30\.0/);
    expect(out).toMatch(/overhead \+ LLM first-phrase wait p50 \/ p99 \(informational\)\s+-\s+14 \/ 46 ms\s+-$/m);
    expect(out).toMatch(/relay\s+1204000\s+0\s+0\.00\s+-\s+2\.80/);
    expect(out).toMatch(/gateway\s+\d+\s+0\s+0\.00\s+0\s+2\.80\s+[\d.]+\s+99\.62 % of 1000000/);
    expect(out).toMatch(/CPU seconds, steady state\s+41\.60\s+24\.00/);
    expect(out).toMatch(/CPU ms per call-second, steady state\s+5\.200\s+3\.000/);
    expect(out).toMatch(/CPU ms per call-second, whole run\s+5\.800\s+3\.250/);
    // A report written before the steady window measured the whole run, and says so.
    const older = formatCallTable(
      withEdit((r) => {
        for (const run of [r.gateway, r.relay!]) {
          delete run.process.cpuWindow;
          delete run.process.wholeRun;
        }
      }),
    );
    expect(older).toMatch(/CPU ms per call-second, whole run\s+5\.200\s+3\.000/);
    expect(older).not.toMatch(/CPU [a-z -]+, steady state/);
    // The gateway's 5.2 ms split by thread: half the loop's, 40 % the pipeline thread's, the rest helpers'.
    expect(out).toMatch(/CPU ms per call-second: event loop \/ pipeline threads \/ other\s+2\.600 \/ 2\.080 \/ 0\.520\s+-$/m);
    expect(out).toMatch(/barge-in reaction p95\s+<= 150 ms\s+138\.0 ms\s+PASS/);
    expect(out).toMatch(/implied capacity .*231 calls\s+-$/m);
    expect(out).toContain('result: OK');
  });

  it('prints FAIL, the first failures, and "-" for the relay when it did not run', () => {
    const out = formatCallTable(
      withEdit((r) => {
        r.relay = null;
        r.cpuRatioToRelay = null;
        r.gateway.calls.failed = 1;
        r.gateway.calls.dropped = 1;
        r.gateway.failures = [{ callSid: 'CA01', kind: 'dropped', message: 'socket closed after turn 2' }];
        r.ok = false;
      }),
    );
    expect(out).toMatch(/failed calls\s+= 0\s+1 failed \(1 of them dropped\) of 200\s+FAIL/);
    expect(out).toContain('gateway CA01 dropped: socket closed after turn 2');
    expect(formatCallTable(withEdit((r) => delete r.gateway.cpuSplit))).not.toContain('event loop / pipeline threads');
    expect(out).toMatch(/CPU ms per call-second, steady state\s+5\.200\s+-/);
    expect(out).toContain('result: NOT OK');
  });

  it("shows the gateway loop thread's run time and wait for a core when the report has them", () => {
    const report = withEdit((r) => (r.gateway.loopCoreWait = { ranMsPerSec: 168.64, waitedMsPerSec: 75.96 }));
    expect(formatCallTable(report)).toMatch(/event-loop thread ran \/ waited for a core, ms per s\s+168\.6 \/ 76\.0\s+-$/m);
    expect(renderCallReportHtml(report)).toContain('168.6 / 76.0');
    expect(formatCallTable(fixture())).not.toContain('waited for a core');
  });

  it('sorts the late frames at the callers by where they became late when the report has it', () => {
    const report = withEdit((r) => {
      r.gateway.framePacing.lateFramesAtCallers = 22;
      r.gateway.framePacing.lateAtCallersWhere = { othersArrived: 1, thisCallerSilent: 21, allCallersSilent: 0 };
      r.relay!.framePacing.lateFramesAtCallers = 185;
      r.relay!.framePacing.lateAtCallersWhere = { othersArrived: 27, thisCallerSilent: 158, allCallersSilent: 0 };
    });
    const out = formatCallTable(report);
    expect(out).toMatch(/^late frames at the callers +all +its caller process read other calls’ frames meanwhile +its caller process read none for >= 20 ms, another did +every caller process read none for >= 20 ms$/m);
    expect(out).toMatch(/^gateway +22 +1 +21 +0$/m);
    expect(out).toMatch(/^relay +185 +27 +158 +0$/m);
    const html = renderCallReportHtml(report);
    expect(markupProblems(html)).toEqual([]);
    expect(html).toMatch(/<td>gateway<\/td>\s*<td[^>]*>22<\/td>\s*<td[^>]*>1<\/td>\s*<td[^>]*>21<\/td>\s*<td[^>]*>0<\/td>/);
    expect(html).toContain('was held itself');
    // A report from before the sorting: neither the table nor its note.
    expect(formatCallTable(fixture())).not.toContain('read other calls');
    expect(renderCallReportHtml(fixture())).not.toContain('was held itself');
  });

  it('shows the targets stored in the report rather than recomputing them', () => {
    const out = formatCallTable(withEdit((r) => (r.targets = [{ name: 'stored target', limit: '<= 1', measured: '2', pass: false }])));
    expect(out).toMatch(/stored target\s+<= 1\s+2\s+FAIL/);
    expect(out).not.toContain('barge-in reaction p95');
  });
});

describe('renderCallReportHtml', () => {
  it('renders a well-formed self-contained page with every chart and the figures', () => {
    const html = renderCallReportHtml(fixture());
    expect(markupProblems(html)).toEqual([]);
    expect(html).not.toMatch(/<script|<link|(src|href)=|url\(/);
    // turn histogram, stages, overhead, barge-in, 2 x (gaps, jitter), CPU, calls, RSS, loop delay, CPU per call-s
    expect(occurrences(html, '<svg')).toBe(13);
    expect(occurrences(html, '</svg>')).toBe(13);
    expect(html).not.toContain('no data');
    expect(html).toContain('p95 &lt;= 150 ms');
    expect(html).toContain('<td class="num">149.0</td>'); // barge-in p99 in its table
    expect(occurrences(html, '<td class="pass">PASS</td>')).toBe(10);
    expect(html).toContain('60 % of 2 cores');
    expect(html).toContain('>5.2 ms<'); // gateway CPU per call-second bar label
    // The gateway by thread next to the relay, in the chart and the table.
    expect(html).toContain('gateway by thread · event loop: 2.6 ms');
    expect(html).toContain('gateway by thread · relay: 3 ms');
    expect(html).toContain('<td class="num">2.600 / 2.080 / 0.520</td>');
    // The CPU figures say their span: the steady state, the whole run's beside it.
    expect(html).toContain('Gateway vs bare relay: CPU per call-second, steady state');
    expect(html).toMatch(/<td>CPU ms per call-second, steady state<\/td>\s*<td[^>]*>5\.200<\/td>\s*<td[^>]*>3\.000<\/td>/);
    expect(html).toMatch(/<td>CPU ms per call-second, whole run<\/td>\s*<td[^>]*>5\.800<\/td>\s*<td[^>]*>3\.250<\/td>/);
    expect(html).toMatch(/<td>gateway Node flags<\/td>\s*<td>none<\/td>/);
  });

  it('shows the Node flags the gateway ran with among the settings', () => {
    const html = renderCallReportHtml(withEdit((r) => (r.settings.gatewayNodeFlags = ['--max-semi-space-size=64', '--trace-gc'])));
    expect(html).toMatch(/<td>gateway Node flags<\/td>\s*<td>--max-semi-space-size=64 --trace-gc<\/td>/);
  });

  it('shows what the gateway did with V8\'s heap growth, and V8\'s own for reports before the setting', () => {
    const row = (html: string) => /<td>gateway V8 heap growth<\/td>\s*<td>([^<]*)<\/td>/.exec(html)?.[1];
    expect(row(renderCallReportHtml(withEdit((r) => (r.settings.heapGrowth = { kind: 'set', percent: 200 }))))).toBe('200 % (GATEWAY_HEAP_GROWING_PERCENT)');
    expect(row(renderCallReportHtml(withEdit((r) => (r.settings.heapGrowth = { kind: 'node-flag', flag: '--heap-growing-percent=0' }))))).toBe('Node&#39;s --heap-growing-percent=0');
    expect(row(renderCallReportHtml(withEdit((r) => (r.settings.heapGrowth = { kind: 'v8-default' }))))).toBe('V8&#39;s own (GATEWAY_HEAP_GROWING_PERCENT=0)');
    expect(row(renderCallReportHtml(withEdit((r) => delete r.settings.heapGrowth)))).toBe('V8&#39;s own (reports before the setting)');
  });

  it('colours a failed target and names it in the summary', () => {
    const html = renderCallReportHtml(
      withEdit((r) => {
        r.gateway.bargeInReaction.p95 = 151;
        r.ok = false;
      }),
    );
    expect(html).toContain('<td class="fail">FAIL</td>');
    expect(html).toContain('NOT OK: barge-in reaction p95.');
  });

  it('escapes names from the run: failure messages and the caller script', () => {
    const html = renderCallReportHtml(
      withEdit((r) => {
        r.gateway.failures = [{ callSid: 'CA<1>', kind: 'protocol', message: '<script>alert("x")</script> & more' }];
      }),
    );
    expect(markupProblems(html)).toEqual([]);
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    expect(html).toContain('Eight o’clock &amp; by the window');
  });

  it('shows the caller processes and notes, and warns when a caller process was busy', () => {
    const quiet = renderCallReportHtml(
      withEdit((r) => {
        r.gateway.generator = [
          { cpuPercent: 31, loopDelayP99Ms: 1.5 },
          { cpuPercent: 34, loopDelayP99Ms: 2.25 },
        ];
        r.gateway.notes = ['2 barge-ins got no <clear>'];
      }),
    );
    expect(markupProblems(quiet)).toEqual([]);
    expect(quiet).toContain('stayed far from saturated');
    expect(quiet).toContain('<td class="num">2.3</td>');
    expect(quiet).toContain('<li>gateway: 2 barge-ins got no &lt;clear&gt;</li>');
    // A report whose late frames were not sorted does not point at a table it lacks.
    expect(quiet).not.toContain('counts those apart');
    const busy = renderCallReportHtml(withEdit((r) => (r.relay!.generator = [{ cpuPercent: 93, loopDelayP99Ms: 40 }])));
    expect(busy).toContain('<td class="fail">93</td>');
    expect(busy).toContain('the figures may measure the generator');
    const table = formatCallTable(withEdit((r) => (r.gateway.generator = [{ cpuPercent: 31, loopDelayP99Ms: null }, { cpuPercent: 34.4, loopDelayP99Ms: 2.25 }])));
    // A report from before the core wait and GC pauses: '-' for them.
    expect(table).toMatch(/^gateway\s+31 34\s+- 2\.3\s+- -\s+- -\s+- -$/m);
    // What held a caller process: its wait for a core and its GC pauses, each process's.
    const held = withEdit((r) => (r.gateway.generator = [{ cpuPercent: 12, loopDelayP99Ms: 2.2, coreWaitMsPerSec: 38.04, gcPausesOver10Ms: 2, gcLongestPauseMs: 20.31 }, { cpuPercent: 12, loopDelayP99Ms: 2.5, coreWaitMsPerSec: 41.5, gcPausesOver10Ms: 0, gcLongestPauseMs: 6.2 }]));
    expect(formatCallTable(held)).toMatch(/waited for a core ms per s each +GC pauses > 10 ms each +longest GC pause ms each$/m);
    expect(formatCallTable(held)).toMatch(/^gateway\s+12 12\s+2\.2 2\.5\s+38\.0 41\.5\s+2 0\s+20\.3 6\.2$/m);
    const heldHtml = renderCallReportHtml(held);
    expect(markupProblems(heldHtml)).toEqual([]);
    const sorted = withEdit((r) => {
      r.gateway.generator = held.gateway.generator;
      r.gateway.framePacing.lateAtCallersWhere = { othersArrived: 0, thisCallerSilent: 0, allCallersSilent: 0 };
    });
    expect(renderCallReportHtml(sorted)).toContain('counts those apart');
    expect(heldHtml).toMatch(/<td[^>]*>2\.2<\/td>\s*<td[^>]*>38\.0<\/td>\s*<td[^>]*>2<\/td>\s*<td[^>]*>20\.3<\/td>/);
  });

  it('warns when the load average shows the machine was busy, and lists it in the settings', () => {
    const busy = renderCallReportHtml(withEdit((r) => Object.assign(r, { loadAverage: { atStart: 1.2, atEnd: 3.75 } })));
    expect(busy).toContain('The machine was busy: load average 1.2 at the start and 3.8 at the end on 2 cores');
    expect(busy).toContain('<td>1.20 / 3.75</td>');
    const calm = renderCallReportHtml(withEdit((r) => Object.assign(r, { loadAverage: { atStart: 0.4, atEnd: 2 } })));
    expect(calm).not.toContain('The machine was busy');
    expect(calm).toContain('<td>0.40 / 2.00</td>');
    expect(renderCallReportHtml(fixture())).not.toContain('load average');
  });

  it('shows the pipeline threads\' busy share and worst loop delay in the process tables, and nothing without threads', () => {
    const withThreads = withEdit((r) => (r.gateway.pipelineThreads = { busyPercent: [31.4, 7.6], loopDelayP99Ms: 4.25, loopDelayMaxMs: null }));
    const table = formatCallTable(withThreads);
    expect(table).toMatch(/pipeline threads busy, % of wall time each +31 8 +-/);
    expect(table).toMatch(/pipeline thread loop delay p99 \/ max ms \(worst\) +4\.3 \/ - +-/);
    expect(renderCallReportHtml(withThreads)).toContain('<td>pipeline threads busy, % of wall time each</td><td class="num">31 8</td><td class="num">-</td>');
    expect(formatCallTable(fixture())).not.toContain('pipeline threads busy');
    expect(renderCallReportHtml(fixture())).not.toContain('pipeline threads busy');
  });

  it('lists the gateway\'s pipeline threads in the settings', () => {
    expect(renderCallReportHtml(fixture())).toContain('<td>gateway pipeline threads</td><td>1</td>');
    expect(renderCallReportHtml(withEdit((r) => (r.settings.pipelineThreads = 0)))).toContain('<td>0 (pipelines on the event loop)</td>');
  });

  it('says there is no relay baseline instead of drawing its charts', () => {
    const html = renderCallReportHtml(
      withEdit((r) => {
        r.relay = null;
        r.cpuRatioToRelay = null;
      }),
    );
    expect(markupProblems(html)).toEqual([]);
    expect(occurrences(html, '<svg')).toBe(11);
    expect(html).toContain('The bare relay did not run in this report');
  });
});

describe('withinShare', () => {
  it("gives the share of the gateway pacer's gaps within 20 ± 5 ms, or '-' without any", () => {
    expect(withinShare({ count: 200, within5Ms: 199 })).toBe('99.50 % of 200');
    expect(withinShare({ count: 0, within5Ms: 0 })).toBe('-');
    expect(withinShare(null)).toBe('-');
  });
});
