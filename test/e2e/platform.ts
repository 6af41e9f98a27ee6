import { randomBytes, randomInt } from 'node:crypto';
import { pino } from 'pino';
import { inject } from 'vitest';
import { InProcessBus, NatsBus, SUBJECTS, newId, spareLoopbackPort } from '@vap/shared';
import type { Bus, Payload } from '@vap/shared';
import { loadConfig, startControlPlane } from '@vap/control-plane';
import type { ControlPlane } from '@vap/control-plane';
import { loadGatewayConfig, startMediaGateway } from '@vap/media-gateway';
import type { MediaGateway } from '@vap/media-gateway';
import { TwilioCallerSimulator, twilioSid } from '@vap/media-gateway/simulators';
import { startProviders } from '@vap/voice-pipeline';
import type { ProviderRuntime } from '@vap/voice-pipeline';
import { createTenant } from '../../control-plane/test/helpers.js';

export const TWILIO_TOKEN = 'e2e_twilio_auth_token_0000000000';

/** Parsed JSON bodies of API responses; tests read the fields they check. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Platform {
  cp: ControlPlane;
  gateway: MediaGateway;
  providers: ProviderRuntime;
  cpUrl: string;
  events: Payload<'platformEvent'>[];
  tenant: { tenantId: string; key: string };
  /** The NATS subject prefix of this platform (its own namespace on the shared test server). */
  natsSubjectPrefix: string;
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }>;
  /** Creates an active agent with its own phone number; returns both. */
  agentWithNumber(overrides?: Record<string, unknown>): Promise<{ agentId: string; number: string }>;
  /** Polls until the conversation of a call is no longer in progress. */
  finishedConversation(conversationId: string, timeoutMs?: number): Promise<Json>;
  /** The stored `error` of a conversation (`{ code, message }`; not part of the API view), or null. */
  storedError(conversationId: string): Promise<{ code: string; message: string } | null>;
  /** `activeCalls` of the gateway's `/healthz`: carrier legs still open. */
  gatewayActiveCalls(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Collects this process's unhandled promise rejections until `stop()`, so a test can assert
 * there were none. While a listener is registered vitest no longer reports them itself: assert
 * `reasons` after each test and once more after closing.
 */
export function collectUnhandledRejections(): { readonly reasons: unknown[]; stop(): void } {
  const reasons: unknown[] = [];
  const listener = (reason: unknown): void => void reasons.push(reason);
  process.on('unhandledRejection', listener);
  return { reasons, stop: () => void process.off('unhandledRejection', listener) };
}

/**
 * `start` on a port that was free a moment ago. Between `spareLoopbackPort` and the listen the
 * port can be taken (by a parallel test's server; CI once failed with EADDRINUSE there, when
 * ports still came from the ephemeral range), so on EADDRINUSE it starts again on another port,
 * up to 5 times.
 */
async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await spareLoopbackPort();
    try {
      return await start(port);
    } catch (err) {
      if (attempt >= 5 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}

/**
 * A phone number no other test holds. The e2e files share one database and run in parallel,
 * so a per-file counter from a random start collided now and then (CI once: duplicate key
 * phone_numbers_e164_key); a taken number is skipped instead.
 */
async function insertFreeNumber(pool: ControlPlane['database']['pool'], tenantId: string, agentId: string): Promise<string> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const number = `+1555${String(randomInt(0, 10_000_000)).padStart(7, '0')}`;
    const { rowCount } = await pool.query(
      `insert into phone_numbers (id, tenant_id, phone_number, country, provider, assigned_agent_id) values ($1, $2, $3, 'US', 'twilio', $4) on conflict do nothing`,
      [newId('num'), tenantId, number, agentId],
    );
    if (rowCount === 1) return number;
  }
  throw new Error('no free test phone number after 20 tries');
}

/**
 * The whole platform on loopback: a control plane (real Postgres), a media gateway and the
 * sandbox provider simulators, talking over the in-process bus or a real NATS server (two
 * connections, as two machines would have).
 */
export async function startPlatform(kind: 'in-process' | 'nats', env: Record<string, string> = {}, opts: { controlPlaneNatsUrl?: string } = {}): Promise<Platform> {
  const logger = pino({ level: 'silent' });
  // Test files run in parallel on one NATS server: each platform gets its own subjects.
  const natsSubjectPrefix = `e2e${randomBytes(6).toString('hex')}`;
  let cpBus: Bus;
  let gwBus: Bus;
  if (kind === 'nats') {
    const url = process.env.TEST_NATS_URL!;
    // `controlPlaneNatsUrl`: the control plane's own way to the server (a hop a test can cut).
    cpBus = await NatsBus.connect(opts.controlPlaneNatsUrl ?? url, { name: 'e2e-cp', subjectPrefix: natsSubjectPrefix });
    gwBus = await NatsBus.connect(url, { name: 'e2e-gw', subjectPrefix: natsSubjectPrefix });
  } else {
    cpBus = gwBus = new InProcessBus();
  }
  const providers = await startProviders({});
  // The public URLs are part of the configuration (Twilio signs them), so the ports are picked first.
  const { gateway, gatewayUrl } = await onFreePort(async (gwPort) => {
    const url = `ws://127.0.0.1:${gwPort}`;
    const started = await startMediaGateway(
      loadGatewayConfig({ GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(gwPort), MEDIA_GATEWAY_PUBLIC_URL: url, TWILIO_AUTH_TOKEN: TWILIO_TOKEN, LOG_LEVEL: 'silent', GATEWAY_HEARTBEAT_INTERVAL_MS: '1000', ...env }),
      { bus: gwBus, logger, providers },
    );
    return { gateway: started, gatewayUrl: url };
  });
  const { cp, cpUrl } = await onFreePort(async (cpPort) => {
    const url = `http://127.0.0.1:${cpPort}`;
    const config = loadConfig({
      DATABASE_URL: inject('databaseUrl'),
      HOST: '127.0.0.1',
      PORT: String(cpPort),
      PUBLIC_URL: url,
      ADMIN_PORT: '0',
      LOG_LEVEL: 'silent',
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      MEDIA_GATEWAY_PUBLIC_URL: gatewayUrl,
      TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
      ...env,
    });
    return { cp: await startControlPlane(config, { bus: cpBus, logger }), cpUrl: url };
  });
  const events: Payload<'platformEvent'>[] = [];
  const sub = cpBus.subscribe('platformEvent', SUBJECTS.platformEvent.wildcard, ({ payload }) => void events.push(payload));
  const tenant = await createTenant(cp.database);

  const api: Platform['api'] = async (method, path, body) => {
    const res = await fetch(`${cpUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${tenant.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  return {
    cp,
    gateway,
    providers,
    cpUrl,
    events,
    tenant,
    natsSubjectPrefix,
    api,
    agentWithNumber: async (overrides = {}) => {
      const created = await api('POST', '/api/v1/agents', {
        name: `E2E agent ${randomBytes(4).toString('hex')}`,
        persona: { name: 'Ava', role: 'host at Harbour Bistro' },
        voice: { provider: 'elevenlabs', voiceId: 'voice-ava' },
        llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.3, maxTokens: 200 },
        transcription: { provider: 'deepgram', model: 'nova-2', language: 'en-US' },
        systemPromptTemplate: 'You take bookings for Harbour Bistro. The caller is {{callerNumber}}. Today is {{date}}.',
        firstMessage: 'Hello! Thanks for calling Harbour Bistro. How can I help?',
        endCallPhrases: ['goodbye'],
        dtmfEnabled: true,
        endpointing: { provider: 'vad', silenceDurationMs: 500, utteranceEndMs: 1000 },
        ...overrides,
      });
      if (created.status !== 201) throw new Error(`agent create failed: ${JSON.stringify(created.body)}`);
      const agentId = created.body.id as string;
      const activated = await api('POST', `/api/v1/agents/${agentId}/activate`);
      if (activated.status !== 200) throw new Error(`activate failed: ${JSON.stringify(activated.body)}`);
      const number = await insertFreeNumber(cp.database.pool, tenant.tenantId, agentId);
      return { agentId, number };
    },
    finishedConversation: async (conversationId, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const res = await api('GET', `/api/v1/conversations/${conversationId}`);
        if (res.status === 200 && res.body.status !== 'in_progress') return res.body;
        if (Date.now() > deadline) throw new Error(`conversation ${conversationId} still ${res.body?.status ?? res.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    storedError: async (conversationId) => {
      const { rows } = await cp.database.pool.query<{ error: { code: string; message: string } | null }>('select error from conversations where id = $1', [conversationId]);
      return rows[0]?.error ?? null;
    },
    gatewayActiveCalls: async () => {
      const res = await fetch(`${gateway.url}/healthz`);
      return ((await res.json()) as { activeCalls: number }).activeCalls;
    },
    close: async () => {
      await sub.close();
      await gateway.close();
      await cp.close();
      await providers.close();
      if (kind === 'nats') {
        await cpBus.close();
        await gwBus.close();
      } else await cpBus.close();
    },
  };
}

/** Polls `probe` every 100 ms until it returns something truthy; throws `what` after `timeoutMs`. */
async function until<T>(probe: () => Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A simulated Twilio caller dialling a new agent's number: what the voice webhook answered, and the call if it was connected. */
export async function placeTwilioCall(p: Platform, callSid = twilioSid('CA')): Promise<Awaited<ReturnType<typeof TwilioCallerSimulator.placeCall>>> {
  const { number } = await p.agentWithNumber();
  return TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
}

/**
 * A call from a simulated Twilio caller to a new agent's number, through the voice webhook,
 * once it is in progress and the agent's first message is stored. `callSid`: the call's id
 * (to script a simulator for it first).
 */
export async function callInProgress(p: Platform, callSid = twilioSid('CA')): Promise<{ call: TwilioCallerSimulator; callSid: string; conversationId: string }> {
  const placed = await placeTwilioCall(p, callSid);
  if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
  const conversationId = await until(
    async () => (await p.cp.database.pool.query<{ id: string }>('select id from conversations where external_id = $1', [callSid])).rows[0]?.id,
    5000,
    'no conversation for the call',
  );
  try {
    await until(async () => (await p.api('GET', `/api/v1/conversations/${conversationId}/messages`)).body.messages.length > 0, 15_000, 'no message stored for the call');
  } catch (err) {
    // Say why: a call the control plane ended meanwhile (e.g. taken for lost) drops its messages.
    const { rows } = await p.cp.database.pool.query('select status, end_reason from conversations where id = $1', [conversationId]);
    throw new Error(`${(err as Error).message} (conversation ${JSON.stringify(rows[0])}, gateway calls ${p.gateway.sessions?.activeCalls})`, { cause: err });
  }
  return { call: placed.call, callSid, conversationId };
}
