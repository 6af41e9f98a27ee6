/**
 * What the platform recorded about a finished sandbox call: the gateway's per-call summary
 * (`GET /sandbox/calls/:callSid`), the stored conversation (tenant API with an API key,
 * else the admin call inspector) and, when the LLM is the simulator, its request log.
 */
import type { CallSummary } from '../../media-gateway/src/call-sessions.js';
import type { StoredMessage } from './call-report.js';
import { http } from './platform-targets.js';
import type { PlatformTargets } from './platform-targets.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The gateway's summary of the call once its session has ended (it records the end a
 * moment after the carrier hang-up), or the last one seen after `timeoutMs`; null when the
 * gateway has none.
 */
export async function finalGatewaySummary(gatewayUrl: string, callSid: string, timeoutMs = 10_000): Promise<CallSummary | null> {
  const deadline = Date.now() + timeoutMs;
  let last: CallSummary | null = null;
  for (;;) {
    const res = await http('GET', `${gatewayUrl}/sandbox/calls/${callSid}`);
    if (res.ok && res.status === 200) last = res.body as CallSummary;
    if ((last && last.status !== 'in_progress') || Date.now() > deadline) return last;
    await sleep(200);
  }
}

/** The conversation as stored by the control plane, from whichever source could be read. */
export interface StoredConversation {
  id: string;
  /** As the source spells it: `completed` (tenant API) or `Completed` (admin inspector). */
  status: string;
  /** Tenant API only: the inspector does not show it. */
  endReason: string | null | undefined;
  durationSeconds: number | null;
  costUsd: number | null;
  source: 'tenant API' | 'admin call inspector';
}

/** The stored conversation and, with an API key, its messages; `notes` say what could not be read and why. */
export interface StoredRecord {
  conversation: StoredConversation | null;
  messages: StoredMessage[] | null;
  notes: string[];
}

/** Polls until the stored conversation is final (the control plane writes it when the gateway reports the end). */
async function untilFinal<T>(read: () => Promise<T | { stop: string }>, isFinal: (v: T) => boolean, timeoutMs: number): Promise<T | { stop: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if ((typeof v === 'object' && v !== null && 'stop' in v) || isFinal(v as T) || Date.now() > deadline) return v;
    await sleep(200);
  }
}

type ApiConversation = { id: string; status: string; endReason: string | null; durationSeconds: number | null; cost: { totalUsd: number } | null };
type InspectedCall = { conversation: { id: string; status: string; durationSeconds: number | null; costTotal: number | null } | null };

/**
 * Reads the stored conversation: with an API key from the tenant API (status, end reason
 * and the messages, an interrupted answer cut to what was heard); otherwise, or if the key
 * is refused, from the admin call inspector (status, duration, cost; no messages).
 */
export async function storedRecord(targets: PlatformTargets, ids: { conversationId: string; callSid: string }, apiKey: string | undefined, timeoutMs = 10_000): Promise<StoredRecord> {
  const notes: string[] = [];
  if (apiKey) {
    const headers = { authorization: `Bearer ${apiKey}` };
    const base = `${targets.controlPlaneUrl}/api/v1/conversations/${ids.conversationId}`;
    const conv = await untilFinal<ApiConversation>(
      async () => {
        const res = await http('GET', base, { headers });
        if (!res.ok) return { stop: `the tenant API did not answer (${res.error})` };
        if (res.status !== 200) return { stop: `the tenant API answered HTTP ${res.status} for the conversation${res.status === 401 || res.status === 403 ? ' (API key refused or without conversations:read)' : ''}` };
        return res.body as ApiConversation;
      },
      (c) => c.status !== 'in_progress',
      timeoutMs,
    );
    if ('stop' in conv) notes.push(conv.stop);
    else {
      const msgs = await http('GET', `${base}/messages`, { headers });
      const messages = msgs.ok && msgs.status === 200 ? ((msgs.body as { messages: StoredMessage[] }).messages ?? null) : null;
      if (!messages) notes.push(`the messages could not be read (${msgs.ok ? `HTTP ${msgs.status}` : msgs.error})`);
      const conversation: StoredConversation = { id: conv.id, status: conv.status, endReason: conv.endReason, durationSeconds: conv.durationSeconds, costUsd: conv.cost?.totalUsd ?? null, source: 'tenant API' };
      return { conversation, messages, notes };
    }
  }
  if ('unavailable' in targets.admin) {
    notes.push(`the admin API cannot be used: ${targets.admin.unavailable}`);
    return { conversation: null, messages: null, notes };
  }
  const admin = targets.admin;
  const found = await untilFinal<InspectedCall>(
    async () => {
      const res = await http('GET', `${admin.url}/api/v1/telephony/debug/calls/${ids.callSid}`, { headers: { authorization: `Bearer ${admin.token}` } });
      if (!res.ok) return { stop: `the admin API did not answer at ${admin.url} (${res.error})` };
      if (res.status === 404) return { conversation: null };
      if (res.status !== 200) return { stop: `the admin API answered HTTP ${res.status}${res.status === 401 || res.status === 403 ? ' (admin token refused: same ADMIN_TOKEN or DATA_DIR as the platform?)' : ''}` };
      return res.body as InspectedCall;
    },
    (c) => c.conversation !== null && c.conversation.status !== 'InProgress',
    timeoutMs,
  );
  if ('stop' in found) {
    notes.push(found.stop);
    return { conversation: null, messages: null, notes };
  }
  const c = found.conversation;
  if (!c) notes.push(`the admin call inspector has no conversation for ${ids.callSid}`);
  const conversation: StoredConversation | null = c ? { id: c.id, status: c.status, endReason: undefined, durationSeconds: c.durationSeconds, costUsd: c.costTotal, source: 'admin call inspector' } : null;
  return { conversation, messages: null, notes };
}

/** How many requests the LLM simulator has logged so far (this call's come after). */
export async function llmRequestCount(openAiSimUrl: string): Promise<number> {
  const res = await http('GET', `${openAiSimUrl}/__sim/requests`);
  return res.ok && Array.isArray(res.body) ? res.body.length : 0;
}

/** Bodies (parsed JSON) of the LLM requests logged since `from`. */
export async function llmRequestBodies(openAiSimUrl: string, from: number): Promise<unknown[]> {
  const res = await http('GET', `${openAiSimUrl}/__sim/requests`);
  if (!res.ok || !Array.isArray(res.body)) return [];
  return (res.body as { body?: unknown }[]).slice(from).map((r) => r.body);
}
