import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus, LocalObjectStore, SUBJECTS, newId } from '@vap/shared';
import type { AgentConfig, BusSubscription, Payload } from '@vap/shared';
import { callerSpeechMulaw, mulawDecode, parseWav, startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { loadGatewayConfig } from '../../src/config.js';
import { startMediaGateway } from '../../src/gateway.js';
import type { MediaGateway } from '../../src/gateway.js';
import { runCallerScript } from '../../src/simulators/scripted-caller.js';
import type { TwilioCallerSimulator } from '../../src/simulators/twilio-caller.js';
import type { PlayedChunk } from '../../src/simulators/twilio-caller.js';
import { bistroAgent, dial as dialGateway, standInControlPlane } from '../gateway-world.js';
import { decodeMp3, mp3Channels, onsetMs, quietFromMs, rms } from '../recording-audio.js';

/**
 * Recorded calls through the real gateway: a simulated Twilio caller on the media stream,
 * the sandbox provider simulators, a bus responder standing in for the control plane, and
 * a LocalObjectStore on a temporary directory. The stored files are decoded back.
 */

const logger = pino({ level: 'silent' });
const TENANT = 'ten_recording_test';
const LINES = {
  book: 'Hi, I would like to book a table for two tonight.',
  hours: 'What are your opening hours?',
  where: 'Actually, can you tell me where you are located?',
};
const REPLIES = {
  book: 'Of course. What time would you like to come?',
  hours:
    'We are open every day from eleven in the morning until ten at night, except on Mondays when we open at five in the afternoon, and on public holidays we keep the same hours as on Sundays, which means lunch and dinner are both served.',
  where: 'We are at twelve Harbour Street, next to the ferry terminal.',
};
/** Level (of 1.0 full scale) that counts as someone talking in a 5 ms window; silence decodes to ~0. */
const TALKING = 0.02;

let bus: InProcessBus;
let providers: ProviderRuntime;
let dir: string;
let store: LocalObjectStore;
let gateway: MediaGateway;
/** A second gateway whose recording store cannot write (its directory is a file). */
let brokenGateway: MediaGateway;
const agents = new Map<string, AgentConfig>();
let conversations: Map<string, string>;
const ended = new Map<string, Payload<'sessionEnded'>>();
/** performance.now() when each sessionEnded arrived. */
const endedArrivals = new Map<string, number>();
const errors: Payload<'sessionError'>[] = [];
const subs: BusSubscription[] = [];

function agent(recording: Partial<AgentConfig['recording']> & { enabled: boolean }): string {
  const id = newId('agt');
  agents.set(id, bistroAgent({ name: 'Recorded agent', firstMessage: 'Hello! Thanks for calling Harbour Bistro. How can I help?', recording }));
  return id;
}

function dial(gw: MediaGateway, agentId: string, script: string[]): Promise<{ call: TwilioCallerSimulator; connectedAt: number }> {
  return dialGateway(gw, providers, agentId, TENANT, script, { from: '+14155550100', to: '+14155550199' });
}

async function finished(call: TwilioCallerSimulator): Promise<Payload<'sessionEnded'>> {
  await vi.waitFor(() => expect(ended.has(conversations.get(call.callSid) ?? '')).toBe(true), { timeout: 15_000, interval: 50 });
  return ended.get(conversations.get(call.callSid)!)!;
}

/** Where the loud part of a clip starts (ms): clips may begin with a little silence. */
function clipOnsetMs(mulaw: Uint8Array): number {
  const pcm = Float32Array.from(mulawDecode(mulaw), (s) => s / 32768);
  return onsetMs(pcm, TALKING);
}

/** Played agent audio merged into stretches without gaps (the simulator keeps one entry per 20 ms frame). */
function spans(played: readonly PlayedChunk[]): { startedAt: number; endedAt: number }[] {
  const out: { startedAt: number; endedAt: number }[] = [];
  for (const c of played) {
    const last = out[out.length - 1];
    if (last && c.startedAt - last.endedAt < 30) last.endedAt = c.endedAt;
    else out.push({ startedAt: c.startedAt, endedAt: c.endedAt });
  }
  return out;
}

/** When the first non-silent agent audio the caller heard after `t` started, or null. */
function heardAfter(played: readonly PlayedChunk[], t: number): number | null {
  return played.find((c) => c.startedAt > t)?.startedAt ?? null;
}

/** The agent answers its first message, the caller says one line and hangs up after the answer. */
async function shortCall(gw: MediaGateway, agentId: string): Promise<{ end: Payload<'sessionEnded'>; durationMs: number }> {
  const { call, connectedAt } = await dial(gw, agentId, [LINES.book]);
  await runCallerScript(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }], { speech: callerSpeechMulaw, quietMs: 600 });
  await call.hangup();
  const durationMs = performance.now() - connectedAt;
  return { end: await finished(call), durationMs };
}

beforeAll(async () => {
  bus = new InProcessBus();
  providers = await startProviders({});
  const llm = providers.simulators.openai!;
  llm.addReply({ match: 'book a table', reply: REPLIES.book });
  llm.addReply({ match: 'opening hours', reply: REPLIES.hours });
  llm.addReply({ match: 'located', reply: REPLIES.where });
  dir = await mkdtemp(join(tmpdir(), 'vap-recordings-'));
  store = new LocalObjectStore(join(dir, 'store'));
  await writeFile(join(dir, 'not-a-directory'), 'x');
  const controlPlane = standInControlPlane(bus, agents, (record) => {
    endedArrivals.set(record.conversationId, performance.now());
    ended.set(record.conversationId, record);
  });
  conversations = controlPlane.conversations;
  subs.push(
    controlPlane.subscription,
    bus.subscribe('sessionError', SUBJECTS.sessionError.wildcard, ({ payload }) => void errors.push(payload)),
  );
  const config = loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' });
  gateway = await startMediaGateway(config, { bus, logger, providers, recordingStore: store });
  brokenGateway = await startMediaGateway(config, { bus, logger, providers, recordingStore: new LocalObjectStore(join(dir, 'not-a-directory')) });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await brokenGateway?.close();
  await Promise.all(subs.map((s) => s.close()));
  await providers?.close();
  await bus?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('call recordings', () => {
  it(
    'records a stereo MP3: caller left, agent right, on one timeline, as long as the call, and a barge-in cuts the agent off',
    async () => {
      const agentId = agent({ enabled: true, format: 'mp3', stereo: true, storageRetentionDays: 7 });
      const { call, connectedAt } = await dial(gateway, agentId, [LINES.book, LINES.hours, LINES.where]);
      const speech = { book: await callerSpeechMulaw(LINES.book), hours: await callerSpeechMulaw(LINES.hours), where: await callerSpeechMulaw(LINES.where) };
      const script = { speech: callerSpeechMulaw, quietMs: 600 };

      await runCallerScript(call, [{ expectAgent: true }], script);
      const book = await call.say(speech.book);
      await runCallerScript(call, [{ expectAgent: true }], script);
      const hours = await call.say(speech.hours);
      // The long answer starts; the caller talks over it 1.5 s in.
      await vi.waitFor(() => expect(call.firstAgentAudioAfter(hours.endedAt)).not.toBeNull(), { timeout: 15_000, interval: 20 });
      await new Promise((r) => setTimeout(r, 1500));
      const clearsBefore = call.clears.length;
      const where = await call.say(speech.where);
      await runCallerScript(call, [{ expectAgent: true }], script);
      await call.hangup();
      const callMs = performance.now() - connectedAt;
      const clearAt = call.clears[clearsBefore];
      expect(clearAt).toBeDefined();

      const end = await finished(call);
      const conversationId = conversations.get(call.callSid)!;
      expect(end.recording).toMatchObject({ key: `${TENANT}/${conversationId}.mp3`, format: 'mp3', channels: 2, retentionDays: 7 });
      const mp3 = (await store.get(end.recording!.key))!;
      expect(mp3).not.toBeNull();
      expect(end.recording!.sizeBytes).toBe(mp3.length);
      expect(mp3Channels(mp3)).toBe(2);
      const decoded = await decodeMp3(mp3);
      expect(decoded.errors).toEqual([]);
      expect(decoded.sampleRate).toBe(8000);
      const durationMs = (decoded.samplesDecoded / 8000) * 1000;
      expect(Math.abs(durationMs - callMs)).toBeLessThan(300);
      expect(Math.abs(end.recording!.durationSeconds - durationMs / 1000)).toBeLessThanOrEqual(0.005 + 1e-9); // reported to 0.01 s
      expect(Math.abs(end.durationSeconds - durationMs / 1000)).toBeLessThanOrEqual(0.5);
      const [left, right] = decoded.channelData as [Float32Array, Float32Array];

      // Map the caller's clock onto the recording by the first line's onset.
      const bookOnset = onsetMs(left, TALKING);
      const offset = bookOnset - (book.startedAt + clipOnsetMs(speech.book));
      const rec = (t: number) => t + offset;
      // t=0 is when the session started: after the stream connected, before the first line.
      expect(rec(connectedAt)).toBeLessThanOrEqual(20);
      expect(rec(connectedAt)).toBeGreaterThan(-1000);

      // Caller left: the second line lands where it was said (no drift), and nothing of the caller on the right.
      const hoursOnset = onsetMs(left, TALKING, rec(book.endedAt) + 100);
      // Within 80 ms: the onsets are read on the caller's clock, whose event loop a loaded run delays (65 ms once on a 2-core machine under the whole suite); drift over a call would be far more.
      expect(Math.abs(hoursOnset - rec(hours.startedAt + clipOnsetMs(speech.hours)))).toBeLessThan(80);
      expect(rms(left, rec(book.startedAt), rec(book.endedAt))).toBeGreaterThan(TALKING);
      expect(rms(right, rec(book.startedAt) + 50, rec(book.endedAt) - 50)).toBeLessThan(0.002);

      // Agent right: what the caller heard, when it was heard; the caller's side stays silent meanwhile.
      const heard = spans(call.agentAudio).filter((c) => c.endedAt < clearAt!);
      expect(heard.length).toBeGreaterThanOrEqual(2); // the greeting and the first answer at least
      const firstWords = onsetMs(right, TALKING);
      expect(Math.abs(firstWords - rec(heard[0]!.startedAt))).toBeLessThan(80);
      // Spans are words (the voice pauses between them). A word shorter than 200 ms is within
      // the ±80 ms the caller's clock maps onto the recording to of its own length: a loaded run
      // read 0.007 over an 80 ms word that read 0.04 when idle. The longer ones carry the check.
      const words = heard.filter((s) => s.endedAt - s.startedAt >= 200);
      expect(words.length).toBeGreaterThanOrEqual(2);
      for (const span of words) expect(rms(right, rec(span.startedAt), rec(span.endedAt))).toBeGreaterThan(TALKING);
      expect(rms(left, rec(heard[0]!.startedAt), rec(heard[0]!.endedAt))).toBeLessThan(0.002);
      // Between the answers the right channel is silent: nothing is recorded that was not played.
      for (const [a, b] of heard.slice(1).map((s, i) => [heard[i]!, s] as const)) {
        if (b.startedAt - a.endedAt > 300) expect(rms(right, rec(a.endedAt) + 80, rec(b.startedAt) - 80)).toBeLessThan(0.002);
      }

      // Barge-in. On the caller's clock the clear came `reaction` ms after the interruption
      // began (the VAD's decision time). On the recording's one timeline the agent channel
      // must go silent at that same distance from the caller's onset on the left channel,
      // stay silent until the next answer (the rest of the long answer was queued but never
      // played), and it was mid-answer just before.
      const reaction = clearAt! - (where.startedAt + clipOnsetMs(speech.where));
      expect(reaction).toBeGreaterThan(0);
      expect(reaction).toBeLessThan(1000);
      const interruptOnset = onsetMs(left, TALKING, rec(where.startedAt) - 100);
      expect(Math.abs(interruptOnset - rec(where.startedAt + clipOnsetMs(speech.where)))).toBeLessThan(80);
      const nextAnswer = heardAfter(call.agentAudio, clearAt!);
      expect(nextAnswer).not.toBeNull();
      const clearRec = interruptOnset + reaction;
      expect(rms(right, clearRec - 300, clearRec)).toBeGreaterThan(TALKING / 4);
      // Silent from 100 ms after the clear: the caller's clock is mapped onto the recording only
      // to within 80 ms (the onsets above), and under load the caller hears the clear later
      // than the recorder cut the track, so the first 100 ms can still hold the cut's tail
      // (loaded runs read 0.0012 over the span from clear + 25, and 0.0026 and 0.0037 in a 5 ms
      // window at clear + 60). That the cut erases exactly what the carrier discarded is
      // call-recorder.test.ts's; here: the agent stops at the barge-in and stays silent.
      // The same 100 ms before the next answer: its onset maps to within 80 ms too, and the MP3
      // frames around it spread a little of it earlier (a loaded run read 0.00202 in the 5 ms
      // window 62 ms before it).
      expect(rms(right, clearRec + 100, rec(nextAnswer!) - 100)).toBeLessThan(0.001);
      // Window by window too.
      for (let ms = clearRec + 100; ms < rec(nextAnswer!) - 100; ms += 5) expect(rms(right, ms, ms + 5), `agent audio at ${ms} ms (clear at ${clearRec}, next answer at ${rec(nextAnswer!)})`).toBeLessThan(0.002);
      expect(rec(nextAnswer!) - clearRec).toBeGreaterThan(300);
      // Nothing went wrong on the way.
      expect(errors.filter((e) => e.conversationId === conversationId)).toEqual([]);
    },
    90_000,
  );

  it.concurrent(
    'a gateway shutting down still encodes and stores the calls it ends before publishing them',
    async () => {
      const own = await startMediaGateway(loadGatewayConfig({ GATEWAY_PORT: '0', LOG_LEVEL: 'silent' }), { bus, logger, providers, recordingStore: store });
      const { call, connectedAt } = await dial(own, agent({ enabled: true, format: 'mp3', stereo: true }), [LINES.book]);
      await runCallerScript(call, [{ expectAgent: true }], { speech: callerSpeechMulaw, quietMs: 300 });
      const closedAt = performance.now();
      await own.close();
      const closeResolvedAt = performance.now();
      // The record, recording included, was published before close() resolved.
      const conversationId = conversations.get(call.callSid)!;
      expect(endedArrivals.get(conversationId)).toBeLessThanOrEqual(closeResolvedAt);
      const end = ended.get(conversationId)!;
      expect(end).toMatchObject({ status: 'failed', endReason: 'gateway_shutdown' });
      expect(end.recording).toMatchObject({ key: `${TENANT}/${conversationId}.mp3`, channels: 2 });
      const decoded = await decodeMp3((await store.get(end.recording!.key))!);
      expect(Math.abs((decoded.samplesDecoded / 8000) * 1000 - (closedAt - connectedAt))).toBeLessThan(300);
      expect(onsetMs(decoded.channelData[1]!, TALKING)).toBeGreaterThanOrEqual(0); // the greeting is in it
    },
    60_000,
  );

  it.concurrent(
    'records a mono MP3 with caller and agent mixed when stereo is off',
    async () => {
      const { end, durationMs } = await shortCall(gateway, agent({ enabled: true, format: 'mp3', stereo: false }));
      expect(end.recording).toMatchObject({ format: 'mp3', channels: 1, retentionDays: 30 });
      const mp3 = (await store.get(end.recording!.key))!;
      expect(mp3Channels(mp3)).toBe(1);
      const decoded = await decodeMp3(mp3);
      const mono = decoded.channelData[0]!;
      expect(Math.abs((decoded.samplesDecoded / 8000) * 1000 - durationMs)).toBeLessThan(300);
      // Both voices are in the one channel: the agent's greeting first, then the caller's line.
      const greeting = onsetMs(mono, TALKING);
      expect(greeting).toBeGreaterThanOrEqual(0);
      expect(quietFromMs(mono, TALKING, greeting, 300)).toBeGreaterThan(greeting + 1000);
      const loudMs = Array.from({ length: Math.floor(mono.length / 40) }, (_, i) => rms(mono, i * 5, i * 5 + 5)).filter((l) => l > TALKING).length * 5;
      expect(loudMs).toBeGreaterThan(3000);
    },
    60_000,
  );

  it.concurrent(
    'records a stereo 16-bit WAV when the agent asks for wav',
    async () => {
      const { end, durationMs } = await shortCall(gateway, agent({ enabled: true, format: 'wav', stereo: true }));
      expect(end.recording).toMatchObject({ format: 'wav', channels: 2 });
      expect(end.recording!.key).toMatch(/\.wav$/);
      const wav = (await store.get(end.recording!.key))!;
      const parsed = parseWav(wav);
      expect(parsed.channels).toBe(2);
      expect(parsed.sampleRateHz).toBe(8000);
      expect(Math.abs(parsed.pcm.length / 8 - durationMs)).toBeLessThan(300);
      expect(wav.length).toBe(44 + parsed.pcm.length * 4);
      // Left and right carry different voices: the greeting is on the right only.
      const view = new DataView(wav.buffer, wav.byteOffset + 44);
      const channel = (c: 0 | 1) => Float32Array.from({ length: parsed.pcm.length }, (_, i) => view.getInt16(i * 4 + c * 2, true) / 32768);
      const [left, right] = [channel(0), channel(1)];
      const greeting = onsetMs(right, TALKING);
      expect(greeting).toBeGreaterThanOrEqual(0);
      expect(rms(right, greeting, greeting + 1000)).toBeGreaterThan(TALKING);
      expect(rms(left, greeting, greeting + 1000)).toBeLessThan(0.002);
      expect(onsetMs(left, TALKING)).toBeGreaterThan(greeting + 1000);
    },
    60_000,
  );

  it.concurrent(
    'stores nothing and reports recording null when the agent does not record',
    async () => {
      const { end } = await shortCall(gateway, agent({ enabled: false }));
      expect(end.recording).toBeNull();
      const conversationId = end.conversationId;
      expect(await store.exists(`${TENANT}/${conversationId}.mp3`)).toBe(false);
      expect(await store.exists(`${TENANT}/${conversationId}.wav`)).toBe(false);
      expect(errors.filter((e) => e.conversationId === conversationId)).toEqual([]);
    },
    60_000,
  );

  it.concurrent(
    'ends the call with recording null and a recoverable recording_failed error when the store fails',
    async () => {
      const { end } = await shortCall(brokenGateway, agent({ enabled: true, format: 'mp3', stereo: true }));
      expect(end.recording).toBeNull();
      expect(end.status).toBe('completed');
      expect(end.messages.length).toBeGreaterThanOrEqual(3);
      const reported = errors.filter((e) => e.conversationId === end.conversationId);
      expect(reported).toEqual([expect.objectContaining({ errorCode: 'recording_failed', recoverable: true, tenantId: TENANT })]);
    },
    60_000,
  );
});
