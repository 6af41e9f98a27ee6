/**
 * Everything a user can read about one real sandbox call, then its deletion: the
 * conversation, messages, transcript, costs, post-call analysis (with custom fields),
 * AnalysisCompleted at a webhook, the stereo recording behind its 1-hour link (decoded
 * back), agent statistics, and a hard delete that leaves nothing in the database or
 * the recording store.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { verifyWebhook } from '@vap/shared';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { decodeMp3, mp3Channels, rms } from '../../media-gateway/test/recording-audio.js';
import { startCaptureReceiver } from './capture-receiver.js';
import type { CaptureReceiver, CapturedDelivery } from './capture-receiver.js';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Json, Platform } from './platform.js';

let p: Platform;
let recordingsDir: string;
let receiver: CaptureReceiver<CapturedDelivery>;

const filesIn = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name));

beforeAll(async () => {
  recordingsDir = await mkdtemp(join(tmpdir(), 'vap-e2e-rec-'));
  receiver = await startCaptureReceiver('/analysis');
  p = await startPlatform('in-process', { RECORDINGS_STORE: 'local', RECORDINGS_DIR: recordingsDir });
  p.providers.simulators.openai!.addReply({ match: 'all for today', reply: 'Thank you for calling. Goodbye!' });
}, 60_000);
afterAll(async () => {
  await p?.close();
  await receiver?.close();
  await rm(recordingsDir, { recursive: true, force: true });
});

describe('the record of a sandbox call', () => {
  it('serves every sub-resource of a real call, then deletes it leaving nothing behind', async () => {
    const { number, agentId } = await p.agentWithNumber({
      recording: { enabled: true, format: 'mp3', stereo: true, storageRetentionDays: 7 },
      analysisConfig: {
        enabled: true,
        sentimentAnalysis: true,
        intentDetection: true,
        summaryEnabled: true,
        customFields: [
          { name: 'reason', type: 'enum', options: ['booking', 'complaint', 'other'] },
          { name: 'partySize', type: 'string' },
        ],
      },
    });
    const hook = await p.api('POST', '/api/v1/webhooks', { agentId, url: receiver.url, events: ['AnalysisCompleted'] });
    expect(hook.status).toBe(201);

    const callSid = `CA${randomBytes(16).toString('hex')}`;
    const lines = ['I would like to book a table for two tonight.', "That's all for today, thanks."];
    p.providers.simulators.deepgram!.setScript(callSid, lines);
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
    if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
    await runCallerScript(placed.call, [{ expectAgent: true }, { say: lines[0]! }, { expectAgent: true }, { say: lines[1]! }, { expectHangup: true }], { speech: callerSpeechMulaw });

    const list = await p.api('GET', `/api/v1/conversations?agentId=${agentId}`);
    expect(list.body.total).toBe(1);
    const id = list.body.data[0].id as string;
    const conv = await p.finishedConversation(id);
    expect(conv).toMatchObject({ id, agentId, status: 'completed', channel: 'phone', direction: 'inbound', caller: { phoneNumber: '+14155550100', country: 'US' } });
    expect(conv.recording).toMatchObject({ available: true, format: 'mp3' });

    // Messages (no word timing) and the transcript (with it) tell the same conversation.
    const messages = (await p.api('GET', `/api/v1/conversations/${id}/messages`)).body;
    expect(messages.messages.filter((m: Json) => m.role === 'user').map((m: Json) => m.content)).toEqual(lines);
    expect(messages.messages.every((m: Json) => m.words === undefined)).toBe(true);
    const transcript = (await p.api('GET', `/api/v1/conversations/${id}/transcript`)).body;
    expect(transcript).toMatchObject({ conversationId: id, language: 'en-US', durationSeconds: conv.durationSeconds });
    const userTurns = transcript.turns.filter((t: Json) => t.speaker === 'user');
    expect(userTurns.map((t: Json) => t.text)).toEqual(lines);
    for (const t of transcript.turns) {
      expect(t.endTime).toBeGreaterThanOrEqual(t.startTime);
      expect(t.words.length).toBeGreaterThan(0);
      for (const w of t.words) expect(w.confidence).toBeGreaterThan(0);
    }

    const costs = (await p.api('GET', `/api/v1/conversations/${id}/costs`)).body;
    expect(costs).toMatchObject({ conversationId: id, currency: 'USD', breakdown: { llm: { provider: 'openai', model: 'gpt-4o-mini' }, tts: { provider: 'elevenlabs' }, stt: { provider: 'deepgram' }, telephony: { provider: 'twilio' } } });
    expect(costs.breakdown.llm.inputTokens).toBeGreaterThan(0);
    expect(costs.total).toBeCloseTo(costs.breakdown.llm.cost + costs.breakdown.tts.cost + costs.breakdown.stt.cost + costs.breakdown.telephony.cost, 6);

    // One latency breakdown per agent reply to a caller line (the greeting is not a reply).
    const latency = (await p.api('GET', `/api/v1/conversations/${id}/latency`)).body;
    expect(latency.turns).toHaveLength(lines.length);
    for (const t of latency.turns) expect(t.totalMs).toBeGreaterThan(0);
    expect(latency.summary).toMatchObject({ turns: lines.length, maxTotalMs: Math.max(...latency.turns.map((t: Json) => t.totalMs as number)) });

    // Post-call analysis runs as a background job after the call.
    await expect.poll(async () => (await p.api('GET', `/api/v1/conversations/${id}/analysis`)).status, { timeout: 30_000 }).toBe(200);
    const analysis = (await p.api('GET', `/api/v1/conversations/${id}/analysis`)).body;
    expect(analysis).toMatchObject({ conversationId: id, sentiment: expect.stringMatching(/^(positive|neutral|negative)$/), intent: expect.any(String), summary: expect.any(String) });
    expect(['booking', 'complaint', 'other']).toContain(analysis.customFields.reason);
    expect(typeof analysis.customFields.partySize).toBe('string');
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);
    const event = JSON.parse(receiver.received[0]!.body) as Json;
    expect(verifyWebhook(hook.body.secret, receiver.received[0]!.headers, receiver.received[0]!.body)).toMatchObject({ ok: true });
    expect(event).toMatchObject({ type: 'AnalysisCompleted', agentId, data: { conversationId: id, sentiment: analysis.sentiment, sentimentScore: analysis.sentimentScore, intent: analysis.intent, summary: analysis.summary, customFields: analysis.customFields } });
    expect((await p.api('GET', `/api/v1/conversations/${id}`)).body.analysis).toMatchObject({ sentiment: analysis.sentiment, customFields: analysis.customFields });

    // The recording: a 1-hour link to a stereo MP3 as long as the call, caller left, agent right.
    const link = (await p.api('GET', `/api/v1/conversations/${id}/recording`)).body;
    expect(link).toMatchObject({ url: expect.stringContaining(id), format: 'mp3', durationSeconds: expect.any(Number) });
    expect(Math.abs(Date.parse(link.expiresAt) - Date.now() - 3_600_000)).toBeLessThan(60_000);
    const mp3 = new Uint8Array(await (await fetch(link.url)).arrayBuffer());
    expect(mp3Channels(mp3)).toBe(2);
    const audio = await decodeMp3(mp3);
    const seconds = audio.samplesDecoded / audio.sampleRate;
    // durationSeconds are whole seconds in the API, like the conversation's.
    expect(Math.abs(seconds - link.durationSeconds)).toBeLessThanOrEqual(0.51);
    expect(conv.recording.durationSeconds).toBe(link.durationSeconds);
    expect(Math.abs(seconds - conv.durationSeconds)).toBeLessThanOrEqual(1);
    const [left, right] = audio.channelData as [Float32Array, Float32Array];
    const turnOf = (speaker: string) => transcript.turns.find((t: Json) => t.speaker === speaker);
    const userTurn = turnOf('user');
    const agentTurn = turnOf('agent');
    // While the caller speaks the left channel carries it; while the greeting plays, the right one.
    expect(rms(left, userTurn.startTime * 1000, userTurn.endTime * 1000)).toBeGreaterThan(rms(right, userTurn.startTime * 1000, userTurn.endTime * 1000));
    expect(rms(right, agentTurn.startTime * 1000, agentTurn.endTime * 1000)).toBeGreaterThan(rms(left, agentTurn.startTime * 1000, agentTurn.endTime * 1000));

    const stats = (await p.api('GET', `/api/v1/agents/${agentId}/stats`)).body;
    expect(stats).toMatchObject({ agentId, totalConversations: 1, totalDurationSeconds: conv.durationSeconds, channelBreakdown: { phone: 1 }, avgSentimentScore: analysis.sentimentScore });

    // Hard delete: nothing left in the database or the store, and the link stops working.
    expect(await filesIn(recordingsDir)).toHaveLength(1);
    expect((await p.api('DELETE', `/api/v1/conversations/${id}`)).status).toBe(204);
    expect(await filesIn(recordingsDir)).toEqual([]);
    expect((await fetch(link.url)).status).toBe(404);
    for (const sub of ['', '/messages', '/transcript', '/costs', '/latency', '/analysis', '/recording']) {
      expect((await p.api('GET', `/api/v1/conversations/${id}${sub}`)).status, sub).toBe(404);
    }
    const { rows } = await p.cp.database.pool.query<{ n: string }>(
      `select (select count(*) from conversations where id = $1)
            + (select count(*) from conversation_messages where conversation_id = $1)
            + (select count(*) from transcript_turns where conversation_id = $1)
            + (select count(*) from jobs where subject_id = $1)
            + (select count(*) from webhook_events where conversation_id = $1 or body like '%' || $1 || '%') as n`,
      [id],
    );
    expect(Number(rows[0]!.n)).toBe(0);
    const usage = await p.cp.database.pool.query<{ conversations: number; total_usd: string }>('select conversations, total_usd from deleted_conversation_usage where tenant_id = $1 and agent_id = $2', [p.tenant.tenantId, agentId]);
    expect(usage.rows).toHaveLength(1);
    expect(Number(usage.rows[0]!.total_usd)).toBeCloseTo(costs.total, 6);
  }, 60_000);
});
