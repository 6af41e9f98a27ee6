/**
 * The open-loop scenario's traffic: what a dashboard and an integration do to the control
 * plane, 80 % reads and 20 % writes, spread over several API keys and agents.
 */
import type { RequestSpec } from './load-generator.js';

/** What the mix needs from the platform under test. */
export interface MixWorld {
  /** API keys (agents:read, agents:write, conversations:read) the requests rotate over. */
  apiKeys: string[];
  /** Existing agents that reads and updates are spread over. */
  agentIds: string[];
  /** A body `POST /api/v1/agents` accepts; its `name` is replaced by a unique one per request. */
  agentBody: Record<string, unknown>;
  /** Distinguishes this run's agent names from other runs' (names are unique per tenant). */
  namePrefix: string;
}

type Step = 'get' | 'list' | 'stats' | 'conversations' | 'create' | 'patch';

/**
 * One cycle of ten: four GETs by id, two agent lists, one agent stats, one conversation
 * list, one create and one update. autocannon's `requests` cycle in order on every
 * connection, so proportions are exact over whole cycles; writes sit at positions 4 and 9
 * so that over {@link mixedRequests}' twenty they fall on four different keys.
 */
export const MIX_CYCLE: readonly Step[] = ['get', 'list', 'get', 'stats', 'create', 'get', 'conversations', 'get', 'list', 'patch'];

/** Page sizes a dashboard asks for. */
const AGENT_PAGE = 5;
const CONVERSATION_PAGE = 10;

/** Labels of the steps, as they appear in the report. */
export const MIX_LABELS: Record<Step, string> = {
  get: 'GET /agents/{id}',
  list: `GET /agents?pageSize=${AGENT_PAGE}`,
  stats: 'GET /agents/{id}/stats',
  conversations: `GET /conversations?pageSize=${CONVERSATION_PAGE}`,
  create: 'POST /agents',
  patch: 'PATCH /agents/{id}',
};

/** The dashboard reads the bare baseline replays (see `BareTemplates`), as paths. */
export const TEMPLATE_PATHS = {
  agentList: `/api/v1/agents?pageSize=${AGENT_PAGE}`,
  conversationList: `/api/v1/conversations?pageSize=${CONVERSATION_PAGE}`,
  agentStats: (agentId: string) => `/api/v1/agents/${agentId}/stats`,
} as const;

/**
 * The sequence each connection cycles through: {@link MIX_CYCLE} twice (twenty requests,
 * 16 reads and 4 writes), request `i` sent with key `i mod keys`. Reads by id and updates
 * rotate over the agents; every create and every update sets a new unique name.
 */
export function mixedRequests(world: MixWorld): RequestSpec[] {
  if (world.apiKeys.length === 0 || world.agentIds.length === 0) throw new Error('the mix needs at least one API key and one agent');
  const byId = (suffix = '') => world.agentIds.map((id) => `/api/v1/agents/${id}${suffix}`);
  const steps = [...MIX_CYCLE, ...MIX_CYCLE];
  return steps.map((step, i): RequestSpec => {
    const headers = { authorization: `Bearer ${world.apiKeys[i % world.apiKeys.length]!}` };
    const label = MIX_LABELS[step];
    switch (step) {
      case 'get':
        return { label, kind: 'read', method: 'GET', paths: byId(), headers };
      case 'list':
        return { label, kind: 'read', method: 'GET', paths: [TEMPLATE_PATHS.agentList], headers };
      case 'stats':
        return { label, kind: 'read', method: 'GET', paths: byId('/stats'), headers };
      case 'conversations':
        return { label, kind: 'read', method: 'GET', paths: [TEMPLATE_PATHS.conversationList], headers };
      case 'create':
        return { label, kind: 'write', method: 'POST', paths: ['/api/v1/agents'], headers, body: world.agentBody, uniqueNamePrefix: `${world.namePrefix} new` };
      case 'patch':
        // A rename (unique, so never a 409) and a setting, as an editor's save does.
        return { label, kind: 'write', method: 'PATCH', paths: byId(), headers, body: { name: '', llm: { temperature: 0.4 } }, uniqueNamePrefix: `${world.namePrefix} renamed` };
    }
  });
}

/** Reads ÷ all requests of a sequence. */
export function readShare(requests: RequestSpec[]): number {
  return requests.length === 0 ? 0 : requests.filter((r) => r.kind === 'read').length / requests.length;
}
