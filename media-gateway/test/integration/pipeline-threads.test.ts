import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { KnowledgePassage, ProviderError, ProviderRuntime, RecordedMessage, RecordedTurn, TurnMetrics } from '@vap/voice-pipeline';
import { callerSpeechMulaw, startProviders } from '@vap/voice-pipeline';
import type { CallLeg } from '../../src/call-leg.js';
import { EarlyBargeIn } from '../../src/early-barge-in.js';
import { PipelineThreads } from '../../src/pipeline-threads/pipeline-threads.js';
import type { SessionHooks } from '../../src/pipeline-threads/pipeline-threads.js';
import type { SessionInit } from '../../src/pipeline-threads/protocol.js';
import { bistroAgent } from '../gateway-world.js';

/**
 * Voice sessions on pipeline threads, driven through PipelineThreads with a leg that plays
 * out instantly: the leg's commands, the session's callbacks and log lines cross the thread
 * boundary, and a thread that dies fails its calls. Whole calls through the gateway on
 * threads run in the e2e and integration suites (PIPELINE_THREADS defaults to 1).
 */

const execFileAsync = promisify(execFile);

/** A carrier leg that plays everything at once: each mark is echoed as it is queued. */
class InstantLeg implements CallLeg {
  readonly provider = 'twilio' as const;
  readonly parameters = {};
  readonly audio: Uint8Array[] = [];
  readonly commands: string[] = [];
  hangups = 0;
  private markListeners: ((name: string) => void)[] = [];
  constructor(readonly callSid: string) {}
  onAudio(): void {}
  onDtmf(): void {}
  onMarkPlayed(listener: (name: string) => void): void {
    this.markListeners.push(listener);
  }
  onAudioSent(): void {}
  onCleared(): void {}
  onEnd(): void {}
  sendAudio(mulaw: Uint8Array): void {
    this.audio.push(mulaw.slice());
  }
  sendMark(name: string): void {
    this.commands.push(`mark ${name}`);
    if (!this.holdMarks) setTimeout(() => this.markListeners.forEach((l) => l(name)), 1);
  }
  /** Set by a test: marks are never echoed, so the session hears its agent speaking throughout. */
  holdMarks = false;
  clear(): void {
    this.commands.push('clear');
    this.agentPlaying = false;
  }
  pause(): void {
    this.commands.push('pause');
    this.agentPlaying = false;
  }
  resume(): void {
    this.commands.push('resume');
    this.agentPlaying = true;
  }
  readonly queuedMs = 0;
  /** Set by a test: the agent is heard (the gateway's own barge-in watch pauses the leg then). */
  agentPlaying = false;
  async hangup(): Promise<void> {
    this.hangups++;
  }
}

function capture(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream).child({ callSid: 'CA1' }), lines };
}

function hooksFor(logger: Logger, retrieve?: (q: string) => Promise<KnowledgePassage[]>) {
  const seen = { messages: [] as { message: RecordedMessage; turn: RecordedTurn }[], errors: [] as { error: ProviderError; recoverable: boolean }[], metrics: [] as TurnMetrics[] };
  const hooks: SessionHooks = {
    logger,
    onMessage: (message, turn) => seen.messages.push({ message, turn }),
    onError: (error, recoverable) => seen.errors.push({ error, recoverable }),
    onTurnMetrics: (m) => seen.metrics.push(m),
    onBargeIn: () => {},
    onFalseInterruption: () => {},
    ...(retrieve ? { retrieve } : {}),
  };
  return { hooks, seen };
}

let providers: ProviderRuntime;
let threads: PipelineThreads | undefined;

beforeAll(async () => {
  providers = await startProviders({});
});
afterAll(async () => {
  await providers.close();
});
afterEach(async () => {
  await threads?.close();
  threads = undefined;
});

function init(overrides: Partial<SessionInit> = {}): SessionInit {
  return {
    agent: bistroAgent(),
    endpoints: providers.endpoints,
    ttsFirstByteTimeoutMs: 2000,
    call: { callSid: 'CA1', from: '+15550001111', to: '+15550002222', metadata: {} },
    startedAtMs: Date.now(),
    logLevel: 'info',
    knowledge: null,
    ...overrides,
  };
}

describe('PipelineThreads', () => {
  it('runs a session on a thread: its first message is sent to the leg as audio with marks, reported when played, and the call stops with its record', async () => {
    providers.simulators.elevenlabs!.reset();
    threads = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }) });
    const leg = new InstantLeg('CA1');
    const { logger } = capture();
    const { hooks, seen } = hooksFor(logger);
    // Opened while the thread still loads the pipeline: the call waits for it.
    const session = threads.open(init(), leg, hooks);
    const startedAt = performance.now();
    session.start();
    await vi.waitFor(() => expect(seen.messages).toHaveLength(1), { timeout: 15_000, interval: 20 });
    const { message, turn } = seen.messages[0]!;
    expect(message).toMatchObject({ role: 'agent', content: 'Hello! Thanks for calling Harbour Bistro.', interrupted: false });
    expect(turn).toMatchObject({ speaker: 'agent', text: 'Hello! Thanks for calling Harbour Bistro.' });
    // About 1.5 s of speech from the TTS simulator, sent on with a mark every 100 ms.
    const bytes = leg.audio.reduce((n, a) => n + a.byteLength, 0);
    expect(bytes).toBeGreaterThan(8000);
    expect(leg.commands.filter((c) => c.startsWith('mark ')).length).toBeGreaterThanOrEqual(Math.floor(bytes / 800));
    expect(threads.activeSessions).toBe(1);

    const result = await session.stop('gateway_shutdown', 'failed');
    const stoppedAt = performance.now();
    expect(leg.hangups).toBe(1);
    // The duration is the gateway's, from start() (the recording's t=0), loading included.
    expect(result.durationMs).toBeGreaterThan(0);
    expect(result.durationMs).toBeLessThanOrEqual(stoppedAt - startedAt);
    expect(result.durationMs).toBeGreaterThan(stoppedAt - startedAt - 50);
    expect(result).toMatchObject({ status: 'failed', endReason: 'gateway_shutdown', error: { code: 'gateway_shutdown' }, language: 'en-US' });
    expect(result.record.messages.map((m) => m.content)).toEqual(['Hello! Thanks for calling Harbour Bistro.']);
    expect(result.record.usage.ttsCharacters).toBeGreaterThan(0);
    await expect(session.ended).resolves.toBe(result);
    await vi.waitFor(() => expect(threads!.activeSessions).toBe(0));
    // One ElevenLabs socket for the call (a context a turn), closed when the call ended.
    const el = providers.simulators.elevenlabs!;
    const sockets = el.connections.filter((c) => c.contexts.length > 0);
    expect(sockets).toHaveLength(1);
    expect(sockets[0]!.endpoint).toBe('multi-stream-input');
    await vi.waitFor(() => expect(sockets[0]!.closeCode).not.toBeNull(), { timeout: 3000, interval: 20 });
    expect(sockets[0]!.messages).toContainEqual({ close_socket: true });
  }, 30_000);

  it('is ready once every thread has loaded the pipeline, and not if a thread dies first', async () => {
    threads = new PipelineThreads({ size: 2, logger: pino({ level: 'silent' }) });
    await expect(threads.ready()).resolves.toBeUndefined();
    await threads.close();
    threads = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }), workerUrl: new URL('data:text/javascript,process.exit(4)') });
    await expect(threads.ready()).rejects.toThrow('pipeline thread exited with code 4 before it was ready');
  }, 30_000);

  it('keeps the process alive while its threads load, and not once they are idle', async () => {
    const fixture = fileURLToPath(new URL('../fixtures/await-pipeline-ready.ts', import.meta.url));
    const startedAt = performance.now();
    const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', fixture], { cwd: dirname(fixture), timeout: 20_000 });
    // It printed after ready() (a process the loading thread did not hold exits first, silently) and then exited by itself.
    expect(stdout).toBe('ready\n');
    expect(performance.now() - startedAt).toBeLessThan(20_000);
  }, 30_000);

  it.runIf(process.platform === 'linux')('runs its threads 10 nice steps below the loop, whatever priority the gateway was started at (19 at most)', async () => {
    const fixture = fileURLToPath(new URL('../fixtures/pipeline-thread-nice.ts', import.meta.url));
    const niceOf = async (niceArgs: string[]) => {
      const { stdout } = await execFileAsync('nice', [...niceArgs, process.execPath, '--import', 'tsx', fixture], { cwd: dirname(fixture), timeout: 30_000 });
      return stdout.trim().split(' ').map(Number);
    };
    // `nice -n N` adds N to this process's own value (0 unless the test run itself was reniced).
    const atOwn = await niceOf(['-n', '0']);
    const own = atOwn[0]!;
    expect(atOwn).toEqual([own, Math.min(19, own + 10)]);
    expect(await niceOf(['-n', '4'])).toEqual([Math.min(19, own + 4), Math.min(19, own + 14)]);
    expect(await niceOf(['-n', '15'])).toEqual([Math.min(19, own + 15), 19]);
  }, 100_000);

  it('reports a provider failure as a ProviderError and writes the session\'s log lines to the call\'s logger at their level', async () => {
    threads = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }) });
    const leg = new InstantLeg('CA2');
    const { logger, lines } = capture();
    const { hooks, seen } = hooksFor(logger);
    // Nothing listens on port 9: every TTS connection is refused.
    const endpoints = { ...providers.endpoints, elevenlabs: { ...providers.endpoints.elevenlabs, baseUrl: 'http://127.0.0.1:9' } };
    const session = threads.open(init({ endpoints }), leg, hooks);
    session.start();
    const result = await session.ended;
    expect(result).toMatchObject({ status: 'failed', endReason: 'error' });
    expect(leg.hangups).toBe(1);
    const fatal = seen.errors.find((e) => !e.recoverable);
    expect(fatal?.error.constructor.name).toBe('ProviderError');
    expect(fatal?.error).toMatchObject({ capability: 'tts', provider: 'elevenlabs' });
    expect(result.error?.code).toBe(fatal?.error.code);
    const ended = lines.find((l) => l['msg'] === 'provider failed, ending the call');
    expect(ended).toMatchObject({ level: 50, callSid: 'CA1', provider: 'elevenlabs', code: fatal?.error.code });
    // pino's error serializer, run on the thread, appends the cause's message.
    expect(ended?.['err']).toMatchObject({ type: 'ProviderError', message: expect.stringContaining(fatal!.error.message) as unknown });
  }, 30_000);

  it('reports each thread\'s calls, busy time and event-loop delay (the 10 ms period included) for the gateway\'s /metrics', async () => {
    threads = new PipelineThreads({ size: 2, logger: pino({ level: 'silent' }) });
    await threads.ready();
    // A few of the threads' 10 ms loop-delay samples.
    await new Promise((r) => setTimeout(r, 100));
    const idle = await threads.stats();
    expect(idle.map((s) => [s.thread, s.calls])).toEqual([[0, 0], [1, 0]]);
    for (const s of idle) {
      expect(s.loopDelay).not.toBeNull();
      expect(s.loopDelay!.p50Ns).toBeGreaterThanOrEqual(9e6);
      expect(s.loopDelay!.p99Ns).toBeGreaterThanOrEqual(s.loopDelay!.p50Ns);
      expect(s.loopDelay!.maxNs).toBeGreaterThanOrEqual(s.loopDelay!.p99Ns);
    }

    const leg = new InstantLeg('CA6');
    const { hooks, seen } = hooksFor(capture().logger);
    const session = threads.open(init({ call: { callSid: 'CA6', from: null, to: null, metadata: {} } }), leg, hooks);
    session.start();
    await vi.waitFor(() => expect(seen.messages).toHaveLength(1), { timeout: 15_000, interval: 20 });
    const busy = await threads.stats();
    // The call runs on the first of two idle threads; its greeting kept that thread busy.
    expect(busy.map((s) => s.calls)).toEqual([1, 0]);
    expect(busy[0]!.busyMs).toBeGreaterThan(idle[0]!.busyMs);
    if (process.platform === 'linux') {
      // Each thread's CPU time from /proc (its ready message carried its OS id): loading the pipeline took some,
      // and the call took more on its thread.
      for (const s of busy) expect(s.cpuMs).toBeGreaterThan(0);
      expect(busy[0]!.cpuMs!).toBeGreaterThan(idle[0]!.cpuMs!);
    }
    await session.stop('gateway_shutdown', 'failed');
    expect((await threads.stats()).map((s) => s.calls)).toEqual([0, 0]);
  }, 30_000);

  it('reads how far behind a thread is from its pings: an unanswered ping\'s age grows with the stall, and the lag falls back once the thread answers at once again', async () => {
    // The stalling fixture's loop is busy 600 ms before it answers its first ping.
    const pool = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }), workerUrl: new URL('../fixtures/stalling-pipeline-worker.mjs', import.meta.url) });
    threads = pool;
    await pool.ready();
    expect(pool.probeLagMs()).toBe(0); // sends the first ping
    await new Promise((r) => setTimeout(r, 300));
    // Unanswered for 300 ms: that is the lag, though no answer came yet.
    expect(pool.probeLagMs()).toBeGreaterThanOrEqual(290);
    // The whole stall shows (pending, then as the slow round trip) until a quick answer comes back.
    await vi.waitFor(() => expect(pool.probeLagMs()).toBeGreaterThanOrEqual(590), { timeout: 3000, interval: 20 });
    await vi.waitFor(() => expect(pool.probeLagMs()).toBeLessThan(100), { timeout: 3000, interval: 20 });
  });

  it('lists a thread that does not answer without its loop delay, and leaves out a thread that died', async () => {
    // The crashing fixture never answers `stats`, and exits once its call starts.
    threads = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }), workerUrl: new URL('../fixtures/crashing-pipeline-worker.mjs', import.meta.url) });
    const asked = performance.now();
    const [silent, ...rest] = await threads.stats(200);
    expect(performance.now() - asked).toBeGreaterThanOrEqual(190);
    expect(rest).toEqual([]);
    expect(silent).toMatchObject({ thread: 0, calls: 0, loopDelay: null });
    // The fixture's ready message carries no OS id: no CPU time.
    expect(silent!.cpuMs).toBeNull();
    expect(silent!.busyMs).toBeGreaterThanOrEqual(0);
    const session = threads.open(init(), new InstantLeg('CA7'), hooksFor(capture().logger).hooks);
    session.start();
    await session.ended;
    expect(await threads.stats(200)).toEqual([]);
  }, 30_000);

  it('fails the calls of a thread that dies, keeping what they said, hangs them up, and runs the next call on a new thread', async () => {
    const { logger: poolLogger, lines: poolLines } = capture();
    threads = new PipelineThreads({ size: 1, logger: poolLogger, workerUrl: new URL('../fixtures/crashing-pipeline-worker.mjs', import.meta.url) });
    const leg = new InstantLeg('CA3');
    const { logger, lines } = capture();
    const { hooks, seen } = hooksFor(logger);
    const session = threads.open(init(), leg, hooks);
    session.start();
    const result = await session.ended;
    expect(result).toMatchObject({ status: 'failed', endReason: 'error', error: { code: 'pipeline_crashed' } });
    expect(result.record.messages.map((m) => m.content)).toEqual(['Hello from the crashing thread.']);
    expect(seen.messages).toHaveLength(1);
    expect(leg.hangups).toBe(1);
    expect(lines.map((l) => l['msg'])).toEqual(['opened on the crashing thread', "the call's pipeline thread stopped; hanging up"]);
    expect(lines[0]).toMatchObject({ level: 30, agent: 'Bistro agent', callSid: 'CA1' });
    expect(poolLines.find((l) => l['msg'] === 'pipeline thread exited; its calls fail')).toMatchObject({ code: 3, calls: 1 });

    const next = threads.open(init(), new InstantLeg('CA4'), hooksFor(logger).hooks);
    next.start();
    await expect(next.ended).resolves.toMatchObject({ error: { code: 'pipeline_crashed' } });
    expect(lines.filter((l) => l['msg'] === 'opened on the crashing thread')).toHaveLength(2);
  }, 30_000);

  it('takes the caller\'s audio, asks the gateway\'s retrieve hook for knowledge, answers the turn and reports its latency', async () => {
    threads = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }) });
    const question = 'What is the soup of the day?';
    providers.simulators.deepgram!.setScript('CA5', [question]);
    const queries: string[] = [];
    const { logger } = capture();
    const { hooks, seen } = hooksFor(logger, async (q) => {
      queries.push(q);
      return [{ documentName: 'menu.txt', text: 'The soup of the day is leek and potato.', pageNumber: null, score: 0.9 }];
    });
    const leg = new InstantLeg('CA5');
    const session = threads.open(init({ call: { callSid: 'CA5', from: null, to: null, metadata: {} }, knowledge: { timeoutMs: 800, maxChars: 6000 } }), leg, hooks);
    session.start();
    await vi.waitFor(() => expect(seen.messages).toHaveLength(1), { timeout: 15_000, interval: 20 });
    // The caller speaks, then stays quiet, in 20 ms frames at real time.
    const speech = await callerSpeechMulaw(question);
    const audio = new Uint8Array(speech.byteLength + 8 * 1500).fill(0xff);
    audio.set(speech);
    for (let at = 0; at < audio.byteLength; at += 160) {
      session.audio(audio.subarray(at, at + 160));
      await new Promise((r) => setTimeout(r, 20));
    }
    await vi.waitFor(() => expect(seen.messages.length).toBeGreaterThanOrEqual(3), { timeout: 15_000, interval: 20 });
    expect(queries).toEqual([question]);
    expect(seen.messages[1]!.message).toMatchObject({ role: 'user', content: question });
    expect(seen.messages[2]!.message.role).toBe('agent');
    expect(seen.metrics).toHaveLength(1);
    expect(seen.metrics[0]!.totalMs).toBeGreaterThan(0);
    await session.stop('test_over', 'completed');
  }, 30_000);

  it('pauses the agent from the gateway\'s loop on the frame that makes 100 ms of voice over it, not waiting for the thread, which takes the pause over and confirms it: one barge-in, with the loop\'s reaction', async () => {
    threads = new PipelineThreads({ size: 1, logger: pino({ level: 'silent' }) });
    const line = 'Can you repeat that please?';
    providers.simulators.deepgram!.setScript('CA8', [line]);
    const { logger } = capture();
    const { hooks } = hooksFor(logger);
    const bargeIns: number[] = [];
    hooks.onBargeIn = (ms) => bargeIns.push(ms);
    const leg = new InstantLeg('CA8');
    leg.holdMarks = true;
    const session = threads.open(init({ call: { callSid: 'CA8', from: null, to: null, metadata: {} } }), leg, hooks);
    session.start();
    // The greeting reaches the leg; its marks are never echoed, so it is heard throughout.
    await vi.waitFor(() => expect(leg.audio.length).toBeGreaterThan(0), { timeout: 15_000, interval: 20 });
    leg.agentPlaying = true;
    const speech = await callerSpeechMulaw(line);
    const audio = new Uint8Array(8 * 400 + speech.byteLength + 8 * 1000).fill(0xff);
    audio.set(speech, 8 * 400);
    // Where the detector's rule is met: the fifth frame of a voiced run (a watch of the test's own, on the same frames).
    let frameAt = 0;
    const watch = EarlyBargeIn.forAgent(init().agent.interruption, () => frameAt)!;
    const frames: Uint8Array[] = [];
    for (let at = 0; at < audio.byteLength; at += 160) frames.push(audio.subarray(at, at + 160));
    const due = frames.findIndex((f, i) => ((frameAt = 20 * i), watch.frame(f)) !== null);
    expect(due).toBeGreaterThan(20);
    let firstVoicedAt = 0;
    let pausedAt = 0;
    for (let i = 0; i < frames.length; i++) {
      const before = leg.commands.filter((c) => c === 'pause').length;
      if (i === due - 4) firstVoicedAt = performance.now();
      session.audio(frames[i]!);
      if (i === due) {
        pausedAt = performance.now();
        // Synchronously, in the loop's handling of that frame: the thread has not seen it yet.
        expect(leg.commands.filter((c) => c === 'pause').length).toBe(before + 1);
      } else if (i < due) expect(leg.commands).not.toContain('pause');
      // The first two voiced frames are followed by 80 ms gaps (a carrier's burst after a
      // stall), so the loop's reaction (~200 ms, from the first voiced frame) differs from
      // the one the thread's detector would measure itself (~80 ms, from the third).
      await new Promise((r) => setTimeout(r, i === due - 4 || i === due - 3 ? 80 : 20));
    }
    // The thread took the pause over (its output pauses the leg again: a no-op on a carrier leg), and the word confirmed it.
    await vi.waitFor(() => expect(leg.commands).toContain('clear'), { timeout: 10_000, interval: 20 });
    const after = leg.commands.slice(leg.commands.indexOf('pause'));
    expect(after.filter((c) => c === 'pause' || c === 'clear' || c === 'resume')).toEqual(['pause', 'pause', 'clear']);
    expect(bargeIns).toHaveLength(1);
    expect(bargeIns[0]!).toBeGreaterThanOrEqual(200);
    expect(Math.abs(bargeIns[0]! - (pausedAt - firstVoicedAt))).toBeLessThan(2);
    await session.stop('test_over', 'completed');
  }, 30_000);
});
