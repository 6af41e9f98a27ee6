/**
 * Entry of a caller process of `pnpm bench:calls`: runs its share of the caller slots with
 * the simulated Twilio caller and the scripted conversation (call-script.ts), reports each
 * call as it ends (turn latencies, barge-in reaction, frame gaps inside agent utterances,
 * failures) and, at the end, what the process itself cost (CPU, event-loop delay), so the
 * report shows whether the generator kept up.
 */
import { TwilioCallerSimulator, runCallerScript, twilioSid } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import type { CallFailure } from './call-results.js';
import { AGENT_QUIET_MS, CALLER_LINES, CALL_STEP_GROUPS } from './call-script.js';
import { speechOnly, steadyGaps, utteranceGaps } from './frame-gaps.js';
import type { CallRecord, CallerSlot, ToWorker, WorkerMessage, WorkerRun } from './ipc.js';
import { ProcessSampler, epochNow } from './process-sampler.js';
import { REDIAL_AFTER_FAILURE_MS, isRefusal, redialAfterMs } from './redial.js';

const send = (m: WorkerMessage) => process.send!(m);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** Silence between two lines of a relay call, ms. */
const RELAY_PAUSE_MS = 1500;

/** Calls open now, hung up when the parent says stop. */
const live = new Set<TwilioCallerSimulator>();
let stopping = false;

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

async function main(run: WorkerRun, clips: Map<string, Uint8Array>): Promise<void> {
  const sampler = new ProcessSampler({ intervalMs: 60_000, activeCalls: () => live.size, onSample: () => {} });
  await Promise.all(run.slots.map((slot) => runSlot(run, slot, clips)));
  const { cpuPercent, loopDelayP99Ms } = sampler.lifetime();
  sampler.stop();
  process.send!({ kind: 'done', cpuPercent, loopDelayP99Ms } satisfies WorkerMessage, () => process.exit(0));
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
