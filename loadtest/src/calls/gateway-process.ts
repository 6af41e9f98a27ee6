/**
 * Entry of the gateway-under-test process of `pnpm bench:calls`: a real media gateway
 * (`startMediaGateway`) whose providers are the simulators process (keys and base URLs, as
 * a deployment would point at real APIs), an in-process bus, and a stand-in control plane
 * answering `callPrepare` for the bench agent. Each call's end record (status, end reason,
 * per-turn latency breakdown) goes to the parent; so does a sample of the process every
 * interval. Nothing is recorded; logs are silent unless `--gateway-log` names a file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { InProcessBus, agentConfigSchema, newId } from '@vap/shared';
import type { AgentConfig, Bus, BusSubscription } from '@vap/shared';
import { admissionLimits, loadGatewayConfig, startMediaGateway } from '@vap/media-gateway';
import type { MediaGateway } from '@vap/media-gateway';
import { GREET } from './call-script.js';
import type { ServerStart } from './ipc.js';
import { TWILIO_STREAM_PATH } from './relay-server.js';
import { runBenchServer, sendToParent as send } from './server-lifecycle.js';
import type { BenchServer } from './server-lifecycle.js';

/** The Harbour Bistro host on the sandbox providers, default interruption settings (medium), no recording. */
export function benchAgent(): AgentConfig {
  return agentConfigSchema.parse({
    name: 'Bench agent',
    persona: { name: 'Ava', role: 'host at Harbour Bistro' },
    voice: { provider: 'elevenlabs', voiceId: 'voice-ava' },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    transcription: { provider: 'deepgram', language: 'en-US' },
    systemPromptTemplate: 'You take bookings for Harbour Bistro.',
    firstMessage: GREET,
    endpointing: { provider: 'vad', silenceDurationMs: 500, utteranceEndMs: 1000 },
  });
}

/** Answers `callPrepare` as the control plane would for one agent: a new conversation per call. */
function standInControlPlane(bus: Bus, agentId: string, config: AgentConfig, conversations: Map<string, string>): BusSubscription {
  return bus.respond('callPrepare', async (req) => {
    if (req.agentId !== agentId) return { ok: false, code: 'agent-not-found', message: 'unknown agent' };
    const conversationId = newId('conv');
    conversations.set(conversationId, req.callSid);
    return { ok: true, conversationId, startedAt: new Date().toISOString(), agent: { id: agentId, tenantId: req.tenantId, version: 1, config, llmApiKey: null }, caller: { phoneNumber: req.from, country: 'US' } };
  });
}

async function start(opts: ServerStart): Promise<BenchServer> {
  const p = opts.providers;
  if (!p) throw new Error('the gateway needs the simulators\' addresses');
  const dataDir = mkdtempSync(join(tmpdir(), 'vap-bench-gw-'));
  const config = loadGatewayConfig({
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: '0',
    LOG_LEVEL: opts.logFile === null ? 'silent' : 'debug',
    DATA_DIR: dataDir,
    DEEPGRAM_API_KEY: p.deepgram.apiKey,
    DEEPGRAM_BASE_URL: p.deepgram.url,
    OPENAI_API_KEY: p.openai.apiKey,
    OPENAI_BASE_URL: p.openai.url,
    ELEVENLABS_API_KEY: p.elevenlabs.apiKey,
    ELEVENLABS_BASE_URL: p.elevenlabs.url,
    ...(opts.pipelineThreads === null ? {} : { PIPELINE_THREADS: String(opts.pipelineThreads) }),
    ...(opts.ttsWebSocket === null ? {} : { ELEVENLABS_WEBSOCKET: opts.ttsWebSocket }),
    ...(opts.maxCalls === null ? {} : { GATEWAY_MAX_CALLS: String(opts.maxCalls) }),
    ...(opts.overloadLagMs === null ? {} : { GATEWAY_OVERLOAD_LAG_MS: String(opts.overloadLagMs) }),
  });
  const bus = new InProcessBus();
  const agentId = newId('agt');
  const tenantId = newId('ten');
  const conversations = new Map<string, string>();
  const subs: BusSubscription[] = [
    standInControlPlane(bus, agentId, benchAgent(), conversations),
    bus.respond('callEnd', async (record) => {
      const callSid = conversations.get(record.conversationId);
      if (callSid !== undefined) {
        conversations.delete(record.conversationId);
        send({ kind: 'callEnded', call: { callSid, status: record.status, endReason: record.endReason, turnMetrics: record.turnMetrics } });
      }
      return { ok: true };
    }),
  ];
  // Asynchronous writes: a synchronous log would slow the loop it is measuring.
  const logFile = opts.logFile === null ? null : pino.destination({ dest: opts.logFile, sync: false, mkdir: true });
  const gateway: MediaGateway = await startMediaGateway(config, { bus, logger: logFile === null ? pino({ level: 'silent' }) : pino({ level: 'debug' }, logFile) });
  return {
    ready: { streamUrl: gateway.url.replace(/^http/, 'ws') + TWILIO_STREAM_PATH, metricsUrl: `${gateway.url}/metrics`, agentId, tenantId, pipelineThreads: config.pipelineThreads, ttsWebSocket: config.providers.elevenlabs.websocket, admission: admissionLimits(config), heapGrowth: gateway.heapGrowth },
    activeCalls: () => gateway.sessions?.activeCalls ?? 0,
    close: async () => {
      await gateway.close();
      await Promise.all(subs.map((s) => s.close()));
      await bus.close();
      logFile?.flushSync();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

runBenchServer(start);
