import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';

/** A running baseline server. */
export interface BareServer {
  /** Origin it listens on, e.g. http://127.0.0.1:41235. */
  url: string;
  close(): Promise<void>;
}

/** Real answers of the platform, taken once, that the baseline replays so payload sizes match. */
export interface BareTemplates {
  /** `GET /api/v1/agents/{id}`. */
  agent: Record<string, unknown>;
  /** `GET /api/v1/agents?pageSize=…`. */
  agentList: unknown;
  /** `GET /api/v1/agents/{id}/stats`. */
  agentStats: unknown;
  /** `GET /api/v1/conversations?pageSize=…`. */
  conversationList: unknown;
}

/**
 * The baseline: plain Fastify on loopback with no auth, database or validation, answering
 * the platform's own paths so one request sequence drives both. Reads replay `templates`
 * (the agent with the requested id); `POST /api/v1/agents` answers 201 with the body on the
 * agent template and a new id, `PATCH /api/v1/agents/{id}` 200 with the body on the
 * template (shallow). What the platform costs beyond this is the figure the benchmark tracks.
 */
export async function startBareServer(templates: BareTemplates): Promise<BareServer> {
  const app = Fastify({ logger: false });
  type ById = { Params: { agentId: string } };
  app.get<ById>('/api/v1/agents/:agentId', async (req) => ({ ...templates.agent, id: req.params.agentId }));
  app.get('/api/v1/agents', async () => templates.agentList);
  app.get('/api/v1/agents/:agentId/stats', async () => templates.agentStats);
  app.get('/api/v1/conversations', async () => templates.conversationList);
  app.post('/api/v1/agents', async (req, reply) => reply.code(201).send({ ...templates.agent, ...(req.body as Record<string, unknown>), id: `agt_${randomUUID()}` }));
  app.patch<ById>('/api/v1/agents/:agentId', async (req) => ({ ...templates.agent, ...(req.body as Record<string, unknown>), id: req.params.agentId }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: () => app.close() };
}
