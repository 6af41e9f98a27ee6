import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import type { AgentConfig, BusSubscription } from '@vap/shared';
import { DEFAULT_TUNING, DeepgramSimulator } from '@vap/voice-pipeline/simulators';
import type { SimTranscriberTuning } from '@vap/voice-pipeline/simulators';
import { EnergyVad, callerSpeechMulaw, coughMulaw, meaningfulWords, mulawDecode, silenceMulaw, startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import type { MediaGateway } from '../../src/gateway.js';
import type { TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import { bistroAgent, dial, standInControlPlane } from '../gateway-world.js';

/**
 * Barge-in reaction on a real gateway (issue 5): caller speech onset → the Twilio `clear`
 * received by the simulated caller, with the default agent settings (interruption on,
 * `medium`) and the Deepgram simulator at zero latency. Real speech clips are spoken over
 * the agent's long answers, one after another on one call, and each reaction is split into
 * its stages (ms from the onset: the start of the audio in the clip's first voiced frame):
 *
 *   → VAD onset: the 60 ms of voice the turn detector needs have left the caller
 *   → first meaningful word: the STT simulator sends the first result with a non-backchannel word
 *   → interrupt = clear sent: one synchronous step in the gateway (the `interrupt` frame reaches
 *     the audio output, which sends `clear`), seen through the gateway's barge-in metric
 *   → clear received by the caller.
 *
 * At `medium` the first meaningful word is what allows the interrupt (a cough or "mm-hmm"
 * must not cut the agent off), so the reaction is the STT's first-word time plus our share.
 * The default simulator hears a word after 200 ms of speech (it tells a cough from speech by
 * length), so there the test bounds our share; the 150 ms target is checked against a
 * simulator tuned to hear the first word after 100 ms.
 */
const logger = pino({ level: 'silent' });
const TENANT = 'ten_barge_in_test';
const FRAME_MS = 20;
const LONG_ANSWER =
  'We are open every day from eleven in the morning until ten at night, except on Mondays when we open at five in the afternoon, and on public holidays we keep the same hours as on Sundays, which means that lunch and dinner are both served.';
/** Lines that open with a meaningful word (not a backchannel), so one word is enough at `medium`. */
const BARGE_IN_LINES = [
  'Actually, can you tell me where you are located?',
  'Can you repeat that please?',
  'I need to change my booking.',
  'What are your opening hours?',
  'Seven o\'clock works for me.',
  'Hi, I would like to book a table for two tonight.',
  'Hello?',
];
/** Talk over the agent this long after its audio started at the caller. */
const AFTER_MS = 500;

interface Sample {
  line: string;
  /** All ms from the caller's speech onset. */
  vadOnset: number;
  firstWord: number | null;
  clearSent: number | null;
  clearReceived: number | null;
}

/** A gateway on the sandbox providers; `tuning` replaces the Deepgram simulator's recogniser tuning. */
interface World {
  providers: ProviderRuntime;
  gateway: MediaGateway;
  agentId: string;
  /** performance.now() of each barge-in the gateway reported (its `clear` has just been sent). */
  bargeInsAt: number[];
  close(): Promise<void>;
}

async function startWorld(tuning?: Partial<SimTranscriberTuning>): Promise<World> {
  const bus = new InProcessBus();
  let providers: ProviderRuntime;
  if (tuning) {
    const stt = await DeepgramSimulator.start({ tuning });
    providers = await startProviders({ deepgram: { apiKey: stt.apiKey, baseUrl: stt.url } });
    providers.endpoints.deepgram = { ...providers.endpoints.deepgram, simulated: true };
    providers.simulators.deepgram = stt; // closed with the others
  } else providers = await startProviders({});
  providers.simulators.openai!.defaultReply = () => LONG_ANSWER;
  const agents = new Map<string, AgentConfig>([[newId('agt'), bistroAgent({ name: 'Barge-in agent', firstMessage: LONG_ANSWER })]]);
  const subs: BusSubscription[] = [standInControlPlane(bus, agents).subscription];
  const gateway = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' }), { bus, logger, providers });
  // The session reports a barge-in right after its audio output sent `clear` (same call stack).
  const bargeInsAt: number[] = [];
  const metrics = gateway.metrics;
  const observe = metrics.bargeIn.bind(metrics);
  metrics.bargeIn = (ms: number) => {
    bargeInsAt.push(performance.now());
    observe(ms);
  };
  return {
    providers,
    gateway,
    agentId: [...agents.keys()][0]!,
    bargeInsAt,
    close: async () => {
      await gateway.close();
      await Promise.all(subs.map((s) => s.close()));
      await providers.close();
      await bus.close();
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Index of the first voiced frame, and of the frame completing `runMs` of voice in a row, by the gateway's energy VAD after line silence. */
function voiceOnsets(mulaw: Uint8Array, runMs: number): { first: number; run: number } {
  const vad = new EnergyVad({ sampleRateHz: 8000 });
  const quiet = mulawDecode(silenceMulaw(FRAME_MS));
  for (let i = 0; i < 50; i++) vad.process(quiet);
  const pcm = mulawDecode(mulaw);
  let first = -1;
  let voiced = 0;
  let silent = 0;
  for (let i = 0; i * 160 < pcm.length; i++) {
    const frame = new Int16Array(160);
    frame.set(pcm.subarray(i * 160, Math.min((i + 1) * 160, pcm.length)));
    if (vad.process(frame).isSpeech) {
      if (first < 0) first = i;
      voiced += FRAME_MS;
      silent = 0;
      if (voiced >= runMs) return { first, run: i };
    } else if ((silent += FRAME_MS) >= 2 * FRAME_MS) voiced = 0;
  }
  throw new Error('the clip never reaches the voiced run');
}

async function agentSpeaking(call: TwilioCallerSimulator, since: number): Promise<number> {
  const deadline = performance.now() + 15_000;
  for (;;) {
    const at = call.firstAgentAudioAfter(since);
    if (at !== null) return at;
    if (performance.now() > deadline) throw new Error('the agent did not speak');
    await sleep(10);
  }
}

/** Wall times of the STT simulator's results on this call's connection, as they are sent. */
function watchStt(world: World, callSid: string): { at: number; text: string }[] {
  const conn = world.providers.simulators.deepgram!.connections.find((c) => c.callKey === callSid);
  if (!conn) throw new Error('no STT connection for the call');
  const log: { at: number; text: string }[] = [];
  const push = conn.sent.push.bind(conn.sent);
  conn.sent.push = (...messages) => {
    for (const m of messages) if (m.type === 'Results') log.push({ at: performance.now(), text: m.channel.alternatives[0]?.transcript ?? '' });
    return push(...messages);
  };
  return log;
}

/** One call; the caller talks over each of the agent's long answers with the next line. */
async function bargeIns(world: World, count: number): Promise<Sample[]> {
  const lines = Array.from({ length: count }, (_, i) => BARGE_IN_LINES[i % BARGE_IN_LINES.length]!);
  const { call } = await dial(world.gateway, world.providers, world.agentId, TENANT, lines);
  const samples: Sample[] = [];
  try {
    let since = performance.now() - 1;
    await agentSpeaking(call, since);
    const stt = watchStt(world, call.callSid);
    for (const line of lines) {
      const audio = await callerSpeechMulaw(line);
      const { first, run } = voiceOnsets(audio, 60);
      const speaking = await agentSpeaking(call, since);
      await sleep(Math.max(0, speaking + AFTER_MS - performance.now()));
      const clearsBefore = call.clears.length;
      const bargeInsBefore = world.bargeInsAt.length;
      const sttBefore = stt.length;
      const { startedAt, endedAt } = await call.say(audio);
      since = endedAt;
      // Frame k of the clip left the caller k ticks (20 ms) after its first frame, carrying
      // the 20 ms of audio before that: the speech began one frame before its frame was sent.
      const onset = startedAt + (first - 1) * FRAME_MS;
      const word = stt.slice(sttBefore).find((m) => meaningfulWords(m.text).length > 0);
      const clearSent = world.bargeInsAt[bargeInsBefore];
      const clearAt = call.clears[clearsBefore];
      samples.push({
        line,
        vadOnset: (run - first + 1) * FRAME_MS, // from the clip: when its 60 ms voiced run has been sent
        firstWord: word ? word.at - onset : null,
        clearSent: clearSent === undefined ? null : clearSent - onset,
        clearReceived: clearAt === undefined ? null : clearAt - onset,
      });
    }
  } finally {
    await call.hangup();
  }
  return samples;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function table(samples: Sample[]): string {
  const fmt = (v: number | null) => (v === null ? '   -' : String(Math.round(v)).padStart(4));
  const rows = samples.map((s) => `${fmt(s.vadOnset)} ${fmt(s.firstWord)} ${fmt(s.clearSent)} ${fmt(s.clearReceived)}  ${s.line}`);
  const stage = (name: string, pick: (s: Sample) => number | null) => {
    const v = samples.map(pick).filter((x): x is number => x !== null);
    return v.length === 0 ? `${name}: none` : `${name}: p50 ${Math.round(percentile(v, 50))} p95 ${Math.round(percentile(v, 95))} max ${Math.round(Math.max(...v))}`;
  };
  return [
    'ms from caller speech onset:',
    ' vad word sent recv  line',
    ...rows,
    stage('VAD onset', (s) => s.vadOnset),
    stage('first meaningful word', (s) => s.firstWord),
    stage('interrupt = clear sent', (s) => s.clearSent),
    stage('clear received', (s) => s.clearReceived),
  ].join('\n');
}

describe('barge-in reaction with the default Deepgram simulator', () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  }, 60_000);
  afterAll(async () => world?.close());

  it('clears the agent a few ms after the STT sends the first meaningful word, every time', { timeout: 180_000 }, async () => {
    const samples = await bargeIns(world, 20);
    const report = table(samples);
    console.log(`default Deepgram simulator (first word after ${DEFAULT_TUNING.minSpeechMs} ms of speech)\n${report}`);
    expect(samples.every((s) => s.clearReceived !== null && s.firstWord !== null), `every barge-in cleared the agent\n${report}`).toBe(true);
    // Our share of the reaction: STT word → turn detector → interrupt → clear at the caller.
    // The medium rule adds no wait of its own once the word is there (it used to want 200 ms
    // of unbroken voice, which a pause between words reset: up to 360 ms).
    const ours = samples.map((s) => s.clearReceived! - s.firstWord!);
    expect(percentile(ours, 95), `first word → clear received, p95 <= 40 ms\n${report}`).toBeLessThanOrEqual(40);
  });

  it('neither clears nor cuts the agent for a cough or a backchannel over it', { timeout: 60_000 }, async () => {
    const { call } = await dial(world.gateway, world.providers, world.agentId, TENANT, ['Mm-hmm.']);
    const bargeInsBefore = world.bargeInsAt.length;
    try {
      const speaking = await agentSpeaking(call, performance.now() - 1);
      await sleep(Math.max(0, speaking + AFTER_MS - performance.now()));
      await call.say(coughMulaw());
      await sleep(800);
      const { endedAt } = await call.say(await callerSpeechMulaw('Mm-hmm.'));
      await sleep(1000);
      expect(call.clears).toEqual([]);
      expect(world.bargeInsAt.length).toBe(bargeInsBefore);
      // The agent kept talking through both (its answer is longer than all of this).
      expect(call.agentAudio.filter((c) => c.startedAt > endedAt + 500).length).toBeGreaterThan(0);
      expect(call.marksEchoed.filter((m) => m.cut)).toEqual([]);
    } finally {
      await call.hangup();
    }
  });
});

describe('barge-in reaction with an STT that hears the first word after 100 ms of speech', () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld({ minSpeechMs: 100, interimIntervalMs: 100 });
  }, 60_000);
  afterAll(async () => world?.close());

  it(`clears the agent within 150 ms (p95) of the caller's speech onset at medium sensitivity`, { timeout: 180_000 }, async () => {
    const samples = await bargeIns(world, 12);
    const report = table(samples);
    console.log(`Deepgram simulator tuned to a first word after 100 ms of speech\n${report}`);
    expect(samples.every((s) => s.clearReceived !== null), `every barge-in cleared the agent\n${report}`).toBe(true);
    expect(percentile(samples.map((s) => s.clearReceived!), 95), `barge-in reaction p95 <= 150 ms\n${report}`).toBeLessThanOrEqual(150);
  });
});
