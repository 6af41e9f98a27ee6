/**
 * Entry of a caller process of `pnpm bench:calls`: runs its share of the caller slots with
 * the simulated Twilio caller and the scripted conversation (call-script.ts), reports each
 * call as it ends (turn latencies, barge-in reaction, frame gaps inside agent utterances,
 * failures) and, at the end, what the process itself cost (CPU, event-loop delay, its wait
 * for a core, its GC pauses), so the report shows whether the generator kept up, with when it
 * read agent frames and its calls' late gaps, so the parent can tell a late frame the server
 * sent late from one this process read late (late-gaps.ts).
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { TwilioCallerSimulator, runCallerScript, twilioSid } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { readOwnSchedstat } from '../server-probe.js';
import type { CallFailure } from './call-results.js';
import { AGENT_QUIET_MS, CALLER_LINES, CALL_STEP_GROUPS } from './call-script.js';
import { speechOnly, steadyGaps, utteranceGaps } from './frame-gaps.js';
import type { CallRecord, CallerSlot, ToWorker, WorkerMessage, WorkerRun } from './ipc.js';
import { ArrivalMap, lateGapSpans } from './late-gaps.js';
import type { Span } from './late-gaps.js';
import { ProcessSampler, epochNow } from './process-sampler.js';
import { REDIAL_AFTER_FAILURE_MS, isRefusal, redialAfterMs } from './redial.js';

const send = (m: WorkerMessage) => process.send!(m);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** Silence between two lines of a relay call, ms. */
const RELAY_PAUSE_MS = 1500;

/** Calls open now, hung up when the parent says stop. */
const live = new Set<TwilioCallerSimulator>();
let stopping = false;
/** When this process read agent frames, over all its calls, and its calls' late gaps: the parent sorts each late frame by what this and the other caller processes read meanwhile (late-gaps.ts). */
let arrivalMap: ArrivalMap | null = null;
const lateGaps: Span[] = [];

function failure(callSid: string, kind: CallFailure['kind'], message: string): CallFailure {
  return { callSid, kind, message };
}

async function loadClips(): Promise<Map<string, Uint8Array>> {
  const clips = new Map<string, Uint8Array>();
  for (const line of CALLER_LINES) clips.set(line, speechOnly(await callerSpeechMulaw(line)));
  return clips;
}

async function scriptStt(run: WorkerRun, callSid: string): Promise<void> {
  const res = await fetch(`${run.deepgramUrl}/__sim/script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ callKey: callSid, utterances: CALLER_LINES }) });
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`scripting the STT simulator answered HTTP ${res.status}`);
}

/** Plays the whole conversation; fills `rec` as it goes (turns of finished groups survive a later failure). */
async function converse(call: TwilioCallerSimulator, rec: CallRecord, clips: Map<string, Uint8Array>): Promise<void> {
  const speech = async (text: string) => clips.get(text) ?? speechOnly(await callerSpeechMulaw(text));
  for (const group of CALL_STEP_GROUPS) {
    const timings = await runCallerScript(call, [...group], { speech, quietMs: AGENT_QUIET_MS });
    for (const t of timings) {
      if (t.latencyMs !== null) rec.turnLatenciesMs.push(t.latencyMs);
      if (t.bargeInReactionMs !== undefined) rec.bargeInReactionMs = t.bargeInReactionMs;
    }
  }
}

/** A relay call: the caller's lines with pauses between them until `untilAt`; the relay answers each frame with itself. */
async function monologue(call: TwilioCallerSimulator, clips: Map<string, Uint8Array>, untilAt: number): Promise<void> {
  for (let i = 0; epochNow() < untilAt && !stopping; i++) {
    const clip = clips.get(CALLER_LINES[i % CALLER_LINES.length]!)!;
    const speaking = call.say(clip);
    await Promise.race([speaking, sleep(untilAt - epochNow())]);
    await sleep(Math.min(RELAY_PAUSE_MS, untilAt - epochNow()));
  }
}

/** One call; `redialAfterMs` is how long this slot waits before its next dial. */
async function oneCall(run: WorkerRun, slot: CallerSlot, clips: Map<string, Uint8Array>): Promise<{ record: CallRecord; redialAfterMs: number }> {
  const callSid = twilioSid('CA');
  const dialledAt = epochNow();
  const rec: CallRecord = { callSid, slot: slot.index, dialledAt, connectedAt: null, endedAt: dialledAt, completed: false, failure: null, turnLatenciesMs: [], framesReceived: 0, frameGapsMs: [], steadyFrameGapsMs: [], protocolErrors: [] };
  let call: TwilioCallerSimulator;
  try {
    if (run.target === 'gateway') await scriptStt(run, callSid);
    call = await TwilioCallerSimulator.connect(run.streamUrl, { callSid, customParameters: { agentId: run.agentId, tenantId: run.tenantId }, connectTimeoutMs: 10_000 });
  } catch (err) {
    rec.endedAt = epochNow();
    const at = ((dialledAt - run.runStartAt) / 1000).toFixed(1);
    const refused = isRefusal(err);
    rec.failure = failure(callSid, refused ? 'refused' : 'connect', `${err instanceof Error ? err.message : String(err)} (dialled ${at} s into the run, gave up after ${((rec.endedAt - dialledAt) / 1000).toFixed(1)} s)`);
    return { record: rec, redialAfterMs: redialAfterMs(err) };
  }
  rec.connectedAt = epochNow();
  live.add(call);
  let closedByUs = false;
  let serverClosed = false;
  // A close we did not ask for (neither our hang-up nor the benchmark's stop) was the server's.
  void call.closed.then(() => (serverClosed = !closedByUs && !stopping));
  const hangup = async () => {
    closedByUs = true;
    await call.hangup();
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the call was still running after ${Math.round(run.callTimeoutMs / 1000)} s`)), run.callTimeoutMs);
    });
    if (run.target === 'gateway') await Promise.race([converse(call, rec, clips), timedOut]);
    else await Promise.race([monologue(call, clips, Math.min(dialledAt + run.relayCallMs, run.steadyEndAt)), timedOut]);
    if (serverClosed) rec.failure = failure(callSid, 'dropped', 'the server closed the stream before the script ended');
    else if (!stopping || run.target === 'relay') rec.completed = true;
    else rec.failure = failure(callSid, 'script', 'stopped by the benchmark before the script ended');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const into = `${((epochNow() - rec.connectedAt) / 1000).toFixed(1)} s into the call`;
    rec.failure = failure(callSid, serverClosed ? 'dropped' : 'script', `${stopping ? 'stopped by the benchmark: ' : ''}${message} (${into})`);
  } finally {
    clearTimeout(timer);
    if (!serverClosed) await hangup();
    live.delete(call);
  }
  rec.endedAt = epochNow();
  rec.framesReceived = call.receivedMedia.length;
  const arrivals = call.receivedMedia.map((m) => m.at);
  rec.frameGapsMs = utteranceGaps(arrivals, run.utteranceBreakMs);
  rec.steadyFrameGapsMs = steadyGaps(arrivals, run.utteranceBreakMs);
  // The caller stamps frames by this process's performance.now(); as epoch ms they compare with the other caller processes'.
  const epochArrivals = arrivals.map((at) => performance.timeOrigin + at);
  for (const at of epochArrivals) arrivalMap?.mark(at);
  lateGaps.push(...lateGapSpans(epochArrivals, run.utteranceBreakMs));
  rec.protocolErrors = call.protocolErrors.slice(0, 10);
  if (call.protocolErrors.length > 0 && rec.failure === null) {
    rec.completed = false;
    rec.failure = failure(callSid, 'protocol', call.protocolErrors[0]!);
  }
  return { record: rec, redialAfterMs: rec.failure ? REDIAL_AFTER_FAILURE_MS : 0 };
}

async function runSlot(run: WorkerRun, slot: CallerSlot, clips: Map<string, Uint8Array>): Promise<void> {
  await sleep(slot.startAt - epochNow());
  while (!stopping && epochNow() < run.steadyEndAt) {
    const { record, redialAfterMs: waitMs } = await oneCall(run, slot, clips);
    send({ kind: 'call', record });
    // A caller whose call failed waits before redialling, as people do, rather than hammering a struggling server.
    if (waitMs > 0) await sleep(Math.min(waitMs, run.steadyEndAt - epochNow()));
  }
}

/** Watches this process's GC pauses until `stop`, which says how many lasted over 10 ms and the longest. */
function watchGc(): { stop(): { gcPausesOver10Ms: number; gcLongestPauseMs: number | null } } {
  let over10 = 0;
  let longest: number | null = null;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.duration > 10) over10++;
      if (longest === null || e.duration > longest) longest = e.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop: () => {
      observer.disconnect();
      return { gcPausesOver10Ms: over10, gcLongestPauseMs: longest };
    },
  };
}

async function main(run: WorkerRun, clips: Map<string, Uint8Array>): Promise<void> {
  arrivalMap = new ArrivalMap(run.runStartAt);
  const sampler = new ProcessSampler({ intervalMs: 60_000, activeCalls: () => live.size, onSample: () => {} });
  const gc = watchGc();
  const schedBefore = readOwnSchedstat();
  const startedAt = epochNow();
  await Promise.all(run.slots.map((slot) => runSlot(run, slot, clips)));
  const schedAfter = readOwnSchedstat();
  const elapsedSec = (epochNow() - startedAt) / 1000;
  const coreWaitMsPerSec = schedBefore && schedAfter && elapsedSec > 0 ? (schedAfter.waitNs - schedBefore.waitNs) / 1e6 / elapsedSec : null;
  const { cpuPercent, loopDelayP99Ms } = sampler.lifetime();
  sampler.stop();
  const arrivals = { originMs: arrivalMap.originMs, bytes: arrivalMap.snapshot() };
  process.send!({ kind: 'done', cpuPercent, loopDelayP99Ms, coreWaitMsPerSec, ...gc.stop(), lateGaps, arrivals } satisfies WorkerMessage, () => process.exit(0));
}

const fail = (err: unknown) => {
  send({ kind: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
};

// Speech is rendered before the parent plans the start times, so the first dial is not late.
const loaded = loadClips();
loaded.then(() => send({ kind: 'ready' }), fail);
process.on('message', (m: ToWorker) => {
  if (m.kind === 'run') {
    loaded.then((clips) => main(m, clips)).catch(fail);
  } else if (m.kind === 'stop') {
    stopping = true;
    for (const call of live) void call.hangup();
  }
});
const quit = () => {
  stopping = true;
  for (const call of live) call.drop();
  process.exit(0);
};
process.once('SIGTERM', quit);
process.once('disconnect', quit);
