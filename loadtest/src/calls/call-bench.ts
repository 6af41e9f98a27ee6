/**
 * `pnpm bench:calls [-- --calls 200 | --sweep 50,100,150,200] [--ramp-sec 20 --steady-sec 60 --workers 2 --no-relay
 * --stt-latency-ms 0 --out <dir> --cpu-prof <dir> --perf <dir> --pipeline-threads <n> --tts-websocket <multi-stream-input|stream-input> --max-calls <n> --overload-lag-ms <ms> --gateway-log <file>]`
 * (`call-config.ts`): N simulated Twilio callers against a media gateway on the sandbox providers, then the
 * same callers against a bare WebSocket relay.
 *
 * Processes: the provider simulators; the server under test (a fresh gateway, then a fresh
 * relay); `--workers` caller processes sharing the calls. Calls start evenly over the ramp,
 * each caller redials until the steady state ends, and a gateway call running then plays
 * its script to the end (so every call has its turns and its barge-in); relay calls hang
 * up at the end of the steady state. `--sweep` makes such a run at each level in turn and sums
 * them up (sweep.ts). Loopback only; an overall time budget kills
 * everything that overruns. Writes JSON and HTML to `--out`, prints the table, exits 0
 * when every target that could be measured passed (a sweep: once every level ran).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { AdmissionLimits, HeapGrowth } from '@vap/media-gateway';
import { parsePrometheusText } from '@vap/shared';
import { loadOrExit } from '../config.js';
import { machineInfo } from '../machine-info.js';
import { writeProcessFlameGraphs } from '../profile/flame-file.js';
import { reportFileName } from '../report.js';
import { runBounded } from '../run-bounded.js';
import { buildCallReport, medianCallMs, planSlots, targetRun, withTargets } from './aggregate.js';
import { loadCallBenchConfig } from './call-config.js';
import type { CallBenchConfig } from './call-config.js';
import { checkTargets, formatCallTable, renderCallReportHtml } from './call-report.js';
import { heapGrowthText } from './call-results.js';
import type { CallBenchReport, GeneratorFigures, TargetRun } from './call-results.js';
import { scriptForReport } from './call-script.js';
import { Child } from './child.js';
import { ArrivalMap } from './late-gaps.js';
import type { CallerArrivals } from './late-gaps.js';
import type { CallRecord, GatewayCallEnd, ProviderAddress, ServerMessage, ServerTarget, SimsMessage, ToServer, ToSims, ToWorker, WorkerMessage } from './ipc.js';
import { epochNow } from './process-sampler.js';
import { PERF_NODE_FLAG, PerfRecording, formatPerfProfile, perfProblem, readPerfProfile } from './perf-profile.js';
import { buildSweepReport, formatSweepTable, renderSweepHtml, sweepLevel } from './sweep.js';
import type { SweepLevel } from './sweep.js';
import { gatewayCpuSplit, loopCoreWait, pipelineThreadFigures } from './thread-figures.js';
import type { TimedScrape } from './thread-figures.js';
import type { RawSample } from './process-sampler.js';

type Providers = { deepgram: ProviderAddress; openai: ProviderAddress; elevenlabs: ProviderAddress };

/** A gateway call still running this long after its dial is hung up and counted failed, ms. */
const CALL_TIMEOUT_MS = 120_000;
/** Gaps between agent frames longer than this are pauses between utterances, not pacing, ms. */
const UTTERANCE_BREAK_MS = 500;
/** Relay calls last as long as the gateway's median call; this when the gateway completed none, ms. */
const DEFAULT_RELAY_CALL_MS = 20_000;
const SAMPLE_INTERVAL_MS = 1000;
const START_TIMEOUT_MS = 60_000;
/** Between the caller processes being ready and the first dial, ms. */
const LEAD_MS = 500;
/** How long to wait for the gateway's end records of calls the callers saw end, ms. */
const END_RECORD_WAIT_MS = 10_000;

const benchStartedAt = performance.now();

function progress(message: string): void {
  process.stderr.write(`[${((performance.now() - benchStartedAt) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);
}

/** Everything started, so the shut-down can kill what is still running. */
interface Started {
  children: Set<{ kill(): Promise<void> }>;
}

function track<C extends { kill(): Promise<void> }>(started: Started, child: C): C {
  started.children.add(child);
  return child;
}

async function scrape(url: string | null): Promise<{ lateFrames: number; activeCalls: number; gaps: number; gapsWithin5Ms: number; timed: TimedScrape } | null> {
  if (!url) return null;
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  const m = parsePrometheusText(await res.text());
  const timed = { at: epochNow(), metrics: m };
  // The pacer's own gaps (audio waiting) in fixed buckets: (15, 25] ms is |gap - 20| <= 5.
  const bucket = (le: string) => m.value('vap_outbound_frame_gap_seconds_bucket', { le });
  return {
    lateFrames: m.value('vap_outbound_late_frames_total'),
    activeCalls: m.value('vap_active_calls'),
    gaps: m.value('vap_outbound_frame_gap_seconds_count'),
    gapsWithin5Ms: bucket('0.025') - bucket('0.015'),
    timed,
  };
}

/** The server's metrics at epoch ms `at` (now if past); null without a metrics URL or when the scrape failed (the run goes on, its figures from the run's first and last scrapes). */
async function scrapeAt(url: string | null, at: number): Promise<TimedScrape | null> {
  if (!url) return null;
  await new Promise((r) => setTimeout(r, Math.max(0, at - epochNow())));
  return (await scrape(url).catch(() => null))?.timed ?? null;
}

async function runTarget(config: CallBenchConfig, started: Started, target: ServerTarget, simsProcess: Child<ToSims, SimsMessage>, providers: Promise<Providers>, relayCallMs: number): Promise<{ run: TargetRun; records: CallRecord[]; lines: string[]; pipelineThreads: number | null; ttsWebSocket: string | null; admission: AdmissionLimits | null; heapGrowth: HeapGrowth | null; perfText: string | null }> {
  // The caller processes and the server start side by side: each takes seconds to load.
  const workers = Array.from({ length: config.workers }, (_, i) => track(started, new Child<ToWorker, WorkerMessage>(`caller process ${i + 1}`, new URL('./caller-process.ts', import.meta.url))));
  const workersReady = Promise.all(workers.map((w) => w.next('ready', START_TIMEOUT_MS)));
  const entry = new URL(target === 'gateway' ? './gateway-process.ts' : './relay-process.ts', import.meta.url);
  // `--cpu-prof <dir>`: a V8 CPU profile per thread of the server process, and a flame graph page of each (flame-file.ts);
  // `--gateway-node-flags`: runtime flags for the gateway's process only (the relay stays the same baseline).
  const profDir = config.cpuProfDir;
  // `--perf <dir>`: function names for Linux perf, which records the steady state (perf-profile.ts).
  const perfDir = config.perfDir;
  const nodeFlags = [...(target === 'gateway' ? config.gatewayNodeFlags : []), ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(perfDir ? [PERF_NODE_FLAG] : [])];
  const server = track(started, new Child<ToServer, ServerMessage>(target, entry, [], nodeFlags));
  const samples: RawSample[] = [];
  const gatewayEnds = new Map<string, GatewayCallEnd>();
  server.onMessage((m) => {
    if (m.kind === 'sample') samples.push(m.sample);
    else if (m.kind === 'callEnded') gatewayEnds.set(m.call.callSid, m.call);
  });
  const serverReady = server.next('ready', START_TIMEOUT_MS * 2);
  // Awaited below; until then a rejection must not count as unhandled.
  for (const p of [workersReady, serverReady, providers]) p.catch(() => {});
  const sims = await providers;
  server.send({ kind: 'start', target, providers: target === 'gateway' ? sims : null, sampleIntervalMs: SAMPLE_INTERVAL_MS, pipelineThreads: config.pipelineThreads, ttsWebSocket: config.ttsWebSocket, maxCalls: config.maxCalls, overloadLagMs: config.overloadLagMs, logFile: config.gatewayLogFile });
  const ready = await serverReady;
  const before = await scrape(ready.metricsUrl);
  await workersReady;
  const simsBefore = target === 'gateway' ? await simsUsage(simsProcess) : null;
  const startAt = epochNow() + LEAD_MS;
  const rampEndAt = startAt + config.rampSec * 1000;
  const steadyEndAt = rampEndAt + config.steadySec * 1000;
  server.send({ kind: 'window', fromAt: rampEndAt, toAt: steadyEndAt });
  // The thread figures (CPU split, core waits, pipeline threads) cover the steady state, as the CPU per call-second does.
  const steadyScrapes = [rampEndAt, steadyEndAt].map((at) => scrapeAt(ready.metricsUrl, at));
  let recording: PerfRecording | null = null;
  const perfTimer = perfDir
    ? setTimeout(() => {
        recording = new PerfRecording(server.pid!, join(perfDir, `${target}.perf.data`), config.steadySec);
        recording.done.catch(() => {});
      }, Math.max(0, rampEndAt - epochNow()))
    : undefined;

  const records: CallRecord[] = [];
  const generator: GeneratorFigures[] = [];
  const callerArrivals: CallerArrivals[] = [];
  const shares = planSlots(config.calls, config.workers, startAt, config.rampSec * 1000);
  const done = workers.map((w, i) => {
    w.onMessage((m) => {
      if (m.kind === 'call') records.push(m.record);
    });
    const finished = w.next('done', steadyEndAt - epochNow() + CALL_TIMEOUT_MS + 30_000);
    w.send({
      kind: 'run',
      target,
      streamUrl: ready.streamUrl,
      agentId: ready.agentId,
      tenantId: ready.tenantId,
      deepgramUrl: target === 'gateway' ? sims.deepgram.url : null,
      slots: shares[i]!,
      steadyEndAt,
      relayCallMs,
      runStartAt: startAt,
      callTimeoutMs: CALL_TIMEOUT_MS,
      utteranceBreakMs: UTTERANCE_BREAK_MS,
    });
    return finished.then((m) => {
      generator[i] = { cpuPercent: m.cpuPercent, loopDelayP99Ms: m.loopDelayP99Ms, coreWaitMsPerSec: m.coreWaitMsPerSec, gcPausesOver10Ms: m.gcPausesOver10Ms, gcLongestPauseMs: m.gcLongestPauseMs };
      callerArrivals[i] = { lateGaps: m.lateGaps, arrivals: new ArrivalMap(m.arrivals.originMs, m.arrivals.bytes) };
    });
  });
  progress(`${target}: ${config.calls} callers over ${config.workers} process(es), ramp ${config.rampSec} s, steady ${config.steadySec} s${ready.pipelineThreads === null ? '' : `, pipeline threads ${ready.pipelineThreads}`}${ready.ttsWebSocket === null ? '' : `, ElevenLabs ${ready.ttsWebSocket}`}${ready.admission === null ? '' : `, GATEWAY_MAX_CALLS ${ready.admission.maxCalls}, GATEWAY_OVERLOAD_LAG_MS ${ready.admission.overloadLagMs}`}${ready.heapGrowth === null ? '' : `, heap growth ${heapGrowthText(ready.heapGrowth)}`}${target === 'gateway' && config.gatewayNodeFlags.length > 0 ? `, node flags ${config.gatewayNodeFlags.join(' ')}` : ''}`);
  const ticker = setInterval(() => {
    const last = samples.at(-1);
    const failed = records.filter((r) => r.failure).length;
    progress(`${target}: ${Math.round((epochNow() - startAt) / 1000)} s, ${last?.activeCalls ?? '?'} calls active, ${records.length} ended (${failed} failed)`);
  }, 5000);
  try {
    await Promise.all(done);
  } finally {
    clearInterval(ticker);
    clearTimeout(perfTimer);
  }
  const finishedAt = epochNow();
  const perfRecorded = await perfOutcome(recording);
  const simsAfter = simsBefore ? await simsUsage(simsProcess) : null;

  if (target === 'gateway') {
    const waitUntil = epochNow() + END_RECORD_WAIT_MS;
    while (records.some((r) => r.connectedAt !== null && !gatewayEnds.has(r.callSid)) && epochNow() < waitUntil) await new Promise((r) => setTimeout(r, 100));
  }
  const after = await scrape(ready.metricsUrl);
  server.send({ kind: 'stop' });
  const stopped = await server.next('stopped', 30_000);
  samples.push(stopped.lastSample);
  await Promise.all([server.kill(), ...workers.map((w) => w.kill())]);
  // The profiles are written as the process exits: a flame graph of each thread's steady state beside them.
  if (profDir) for (const line of writeProcessFlameGraphs(profDir, server.pid!, target, { fromAt: rampEndAt, toAt: steadyEndAt, words: `the steady state, ${config.steadySec} s at ${config.calls} calls` })) progress(line);
  // Read now, while nothing is measured (before the relay's run starts).
  const perfText = perfRecorded ? perfReportText(perfRecorded, server.pid!, before?.timed ?? null, target, config.steadySec) : null;

  const run: TargetRun = targetRun({
    target,
    concurrentCalls: config.calls,
    records,
    gatewayEnds,
    samples,
    steadyLoopDelay: stopped.steadyLoopDelay,
    lateFramesAtGateway: before && after ? after.lateFrames - before.lateFrames : null,
    gapsAtGateway: before && after ? { count: after.gaps - before.gaps, within5Ms: after.gapsWithin5Ms - before.gapsWithin5Ms } : null,
    window: { startAt, rampEndAt, steadyEndAt, finishedAt },
    utteranceBreakMs: UTTERANCE_BREAK_MS,
    generator,
    callerArrivals,
  });
  const [steadyFrom, steadyTo] = await Promise.all(steadyScrapes);
  const span = steadyFrom && steadyTo ? { from: steadyFrom, to: steadyTo } : before && after ? { from: before.timed, to: after.timed } : null;
  const threads = span ? pipelineThreadFigures(span.from, span.to) : null;
  if (threads) run.pipelineThreads = threads;
  const split = span ? gatewayCpuSplit(span.from, span.to) : null;
  if (split) run.cpuSplit = split;
  const wait = span ? loopCoreWait(span.from, span.to) : null;
  if (wait) run.loopCoreWait = wait;
  if (simsBefore && simsAfter && simsAfter.at > simsBefore.at) {
    run.simulators = { cpuPercent: ((simsAfter.cpuMs - simsBefore.cpuMs) / (simsAfter.at - simsBefore.at)) * 100, loopDelayP99Ms: simsAfter.loopDelayP99Ms };
  }
  // One line per call for "why did this call fail or run slow": frame gaps left out (they are in the distributions).
  const lines = records.map((r) => {
    const end = gatewayEnds.get(r.callSid);
    return JSON.stringify({ target, ...r, frameGapsMs: undefined, steadyFrameGapsMs: undefined, gateway: end ? { status: end.status, endReason: end.endReason, turnMetrics: end.turnMetrics } : null });
  });
  return { run, records, lines, pipelineThreads: ready.pipelineThreads, ttsWebSocket: ready.ttsWebSocket, admission: ready.admission, heapGrowth: ready.heapGrowth, perfText };
}

/** The recording's file once `perf` has written it; null (with a line on the terminal) when there was none or it failed. */
async function perfOutcome(recording: PerfRecording | null): Promise<string | null> {
  if (!recording) return null;
  try {
    await recording.done;
    return recording.file;
  } catch (err) {
    progress(`perf: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}

/** Reads a target's recording and writes its text report beside it; the text, or null (with a line on the terminal) if perf could not read it. */
function perfReportText(file: string, pid: number, metrics: TimedScrape | null, target: ServerTarget, seconds: number): string | null {
  try {
    const tids = (metrics?.metrics.samples ?? []).filter((x) => x.name === 'vap_pipeline_thread_os_thread_id').sort((a, b) => Number(a.labels['thread']) - Number(b.labels['thread'])).map((x) => x.value);
    const text = formatPerfProfile(target, seconds, readPerfProfile(file, pid, tids));
    const out = file.replace(/\.perf\.data$/, '-perf.txt');
    writeFileSync(out, text);
    progress(`${target}: on-CPU profile in ${out} (perf report -i ${file} for more)`);
    return text;
  } catch (err) {
    progress(`perf: could not read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}

async function simsUsage(sims: Child<ToSims, SimsMessage>): Promise<Extract<SimsMessage, { kind: 'usage' }>> {
  const answer = sims.next('usage', 30_000);
  sims.send({ kind: 'usage' });
  return answer;
}

/** One run at `config.calls`: the gateway, then the relay; writes its report files and prints its tables. */
async function bench(config: CallBenchConfig, started: Started): Promise<{ report: CallBenchReport; jsonFile: string; htmlFile: string }> {
  const startedAt = new Date();
  const loadAtStart = os.loadavg()[0]!;
  progress('starting the provider simulators, the gateway and the caller processes');
  const sims = track(started, new Child<ToSims, SimsMessage>('simulators', new URL('./sims-process.ts', import.meta.url)));
  const providers = sims.next('ready', START_TIMEOUT_MS);
  sims.send({ kind: 'start', sttLatencyMs: config.sttLatencyMs });

  const gateway = await runTarget(config, started, 'gateway', sims, providers, 0);
  const callLines = [...gateway.lines];
  const perfTexts = [gateway.perfText];
  let relay: TargetRun | null = null;
  if (config.relay) {
    const callMs = medianCallMs(gateway.records) ?? DEFAULT_RELAY_CALL_MS;
    progress(`starting the relay and the caller processes (relay calls last ${(callMs / 1000).toFixed(1)} s, the gateway's median call)`);
    const relayRun = await runTarget(config, started, 'relay', sims, providers, callMs);
    relay = relayRun.run;
    callLines.push(...relayRun.lines);
    perfTexts.push(relayRun.perfText);
  }
  await sims.kill();

  const base = buildCallReport({
    startedAt,
    settings: { calls: config.calls, rampSec: config.rampSec, steadySec: config.steadySec, workers: config.workers, sttLatencyMs: config.sttLatencyMs, relay: config.relay, pipelineThreads: gateway.pipelineThreads, ttsWebSocket: gateway.ttsWebSocket, admission: gateway.admission, heapGrowth: gateway.heapGrowth, gatewayNodeFlags: [...config.gatewayNodeFlags], script: scriptForReport() },
    machine: machineInfo(),
    cores: os.availableParallelism(),
    gateway: gateway.run,
    relay,
  });
  const report = { ...withTargets(base, checkTargets(base)), loadAverage: { atStart: loadAtStart, atEnd: os.loadavg()[0]! } };

  mkdirSync(config.outDir, { recursive: true });
  const jsonFile = join(config.outDir, reportFileName(startedAt, 'calls'));
  writeFileSync(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  const htmlFile = jsonFile.replace(/\.json$/, '.html');
  writeFileSync(htmlFile, renderCallReportHtml(report));
  const callsFile = jsonFile.replace(/\.json$/, '.calls.jsonl');
  writeFileSync(callsFile, callLines.length > 0 ? `${callLines.join('\n')}\n` : '');

  for (const text of perfTexts) if (text) process.stdout.write(`\n${text}`);
  process.stdout.write(`\n${formatCallTable(report)}\n\n`);
  for (const t of [report.gateway, report.relay]) {
    if (t?.connect) process.stdout.write(`${t.target} connect (dial → stream open): p50 ${t.connect.p50?.toFixed(0) ?? '-'} ms, p95 ${t.connect.p95?.toFixed(0) ?? '-'} ms, max ${t.connect.max?.toFixed(0) ?? '-'} ms over ${t.connect.count} calls\n`);
  }
  const simsFig = report.gateway.simulators;
  if (simsFig) process.stdout.write(`provider simulators process during the gateway run: CPU ${simsFig.cpuPercent.toFixed(0)} % of a core, event-loop delay p99 ${simsFig.loopDelayP99Ms?.toFixed(1) ?? '-'} ms\n`);
  const busy = Math.max(report.loadAverage.atStart, report.loadAverage.atEnd);
  if (busy > report.capacity.cores) process.stdout.write(`warning: the machine's load average reached ${busy.toFixed(1)} on ${report.capacity.cores} cores: other work competed with the processes measured\n`);
  process.stdout.write(`results written to ${jsonFile} and ${htmlFile}; each call in ${callsFile}\n`);
  process.stdout.write(`${report.ok ? 'OK' : 'NOT OK'}: ${report.gateway.calls.failed} failed gateway calls; ${report.targets.filter((t) => t.pass === false).length} of ${report.targets.length} targets missed\n`);
  return { report, jsonFile, htmlFile };
}

/**
 * `--sweep`: a full run at each level in turn (fresh processes each), then the summary. The
 * summary file is rewritten after each level, so a sweep cut short keeps the levels it ran.
 * Exits 0 once every level ran: the answer is the level held, not a pass or a fail.
 */
async function sweep(config: CallBenchConfig, started: Started, levels: readonly number[]): Promise<number> {
  const startedAt = new Date();
  const jsonFile = join(config.outDir, reportFileName(startedAt, 'calls-sweep'));
  const htmlFile = jsonFile.replace(/\.json$/, '.html');
  const settings = { levels: [...levels], rampSec: config.rampSec, steadySec: config.steadySec, workers: config.workers, relay: config.relay, sttLatencyMs: config.sttLatencyMs };
  const machine = machineInfo();
  const done: SweepLevel[] = [];
  for (const [i, calls] of levels.entries()) {
    progress(`sweep: level ${i + 1} of ${levels.length}, ${calls} concurrent calls`);
    const level = await bench({ ...config, calls, workers: Math.min(config.workers, calls) }, started);
    done.push(sweepLevel(level.report, { json: level.jsonFile, html: level.htmlFile }));
    const sofar = buildSweepReport({ startedAt, settings, machine, levels: done });
    writeFileSync(jsonFile, `${JSON.stringify(sofar, null, 2)}\n`);
    writeFileSync(htmlFile, renderSweepHtml(sofar));
  }
  const summary = buildSweepReport({ startedAt, settings, machine, levels: done });
  process.stdout.write(`\ncapacity sweep\n${formatSweepTable(summary)}\n\nsweep written to ${jsonFile} and ${htmlFile}\n`);
  return 0;
}

async function main(): Promise<void> {
  const config = loadOrExit(() => loadCallBenchConfig());
  if (config.perfDir) {
    const problem = perfProblem();
    if (problem) {
      console.error(`--perf: ${problem}`);
      process.exit(2);
    }
    mkdirSync(config.perfDir, { recursive: true });
  }
  const started: Started = { children: new Set() };
  const shutDown = async () => {
    await Promise.all([...started.children].map((c) => c.kill()));
  };
  // Per target: start-up, ramp, steady, one call's drain, end records and stop; a sweep runs both targets at each level.
  const perTargetMs = START_TIMEOUT_MS * 2 + (config.rampSec + config.steadySec) * 1000 + CALL_TIMEOUT_MS + END_RECORD_WAIT_MS + 60_000;
  const perLevelMs = START_TIMEOUT_MS + perTargetMs * (config.relay ? 2 : 1);
  const levels = config.sweep;
  const run = levels ? () => sweep(config, started, levels) : async () => ((await bench(config, started)).report.ok ? 0 : 1);
  await runBounded({ budgetMs: perLevelMs * (levels?.length ?? 1), run, shutDown });
}

void main();
