/**
 * A recorded sandbox call through the whole platform: the gateway records and stores the
 * call, the control plane keeps the recording with the conversation and hands out a link,
 * and the file behind the link decodes to a stereo recording as long as the call, with
 * the caller on the left and the agent on the right.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { decodeMp3, mp3Channels, onsetMs, rms } from '../../media-gateway/test/recording-audio.js';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

const LINE = 'Hi, I would like to book a table for two tonight.';
const TALKING = 0.02;

let p: Platform;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vap-e2e-recordings-'));
  // One store for both services, as the deployment docs require.
  p = await startPlatform('in-process', { RECORDINGS_DIR: dir });
  p.providers.simulators.openai!.addReply({ match: 'book a table', reply: 'Of course. What time would you like to come?' });
}, 60_000);
afterAll(async () => {
  await p?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a recorded sandbox call', () => {
  it('stores a stereo MP3 whose channels and duration match the call, reachable through the recording link', async () => {
    const { number } = await p.agentWithNumber({ recording: { enabled: true, format: 'mp3', stereo: true, storageRetentionDays: 7 } });
    const placedAt = performance.now();
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number });
    expect(placed.rejected).toBe(false);
    if (placed.rejected) return;
    const call = placed.call;
    p.providers.simulators.deepgram!.setScript(call.callSid, [LINE]);
    const speech = await callerSpeechMulaw(LINE);
    await runCallerScript(call, [{ expectAgent: true }], { speech: callerSpeechMulaw, quietMs: 600 });
    const said = await call.say(speech);
    await runCallerScript(call, [{ expectAgent: true }], { speech: callerSpeechMulaw, quietMs: 600 });
    await call.hangup();
    const callMs = performance.now() - placedAt;

    const conversationId = p.gateway.sessions!.summary(call.callSid)!.conversationId!;
    const conv = await p.finishedConversation(conversationId);
    expect(conv.recording).toMatchObject({ available: true, format: 'mp3' });

    const link = await p.api('GET', `/api/v1/conversations/${conversationId}/recording`);
    expect(link.status).toBe(200);
    expect(link.body.format).toBe('mp3');
    // Both are the call's length in whole seconds, rounded from different precisions.
    expect(Math.abs(link.body.durationSeconds - conv.durationSeconds)).toBeLessThanOrEqual(1);
    const res = await fetch(link.body.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    const mp3 = new Uint8Array(await res.arrayBuffer());
    // The file the gateway wrote, in the directory both services share.
    expect(await readdir(join(dir, p.tenant.tenantId))).toEqual([`${conversationId}.mp3`]);

    expect(mp3Channels(mp3)).toBe(2);
    const decoded = await decodeMp3(mp3);
    expect(decoded.errors).toEqual([]);
    const seconds = decoded.samplesDecoded / 8000;
    // The call as the caller timed it (dial to hang-up) includes the webhook and set-up.
    expect(seconds).toBeLessThanOrEqual(callMs / 1000);
    expect(seconds).toBeGreaterThan(callMs / 1000 - 1);
    expect(Math.abs(seconds - conv.durationSeconds)).toBeLessThanOrEqual(0.5);

    const [left, right] = decoded.channelData as [Float32Array, Float32Array];
    // The greeting is on the right only; the caller's line, later, on the left only.
    const greeting = onsetMs(right, TALKING);
    const line = onsetMs(left, TALKING);
    expect(greeting).toBeGreaterThanOrEqual(0);
    expect(line).toBeGreaterThan(greeting + 1000);
    expect(rms(left, greeting, greeting + 1000)).toBeLessThan(0.002);
    const lineMs = (said.endedAt - said.startedAt) * 0.8;
    expect(rms(left, line, line + lineMs)).toBeGreaterThan(TALKING);
    expect(rms(right, line + 50, line + lineMs)).toBeLessThan(0.002);
  }, 90_000);
});
