import Fastify from 'fastify';

/** A running baseline server. */
export interface BareServer {
  /** Origin it listens on, e.g. http://127.0.0.1:41235. */
  url: string;
  close(): Promise<void>;
}

/**
 * The baseline: plain Fastify on loopback with no auth, database or validation.
 * `GET /bare/:id` answers `template` with that id (pass a real agent so the payload
 * size matches); `POST /bare` echoes the JSON body with 201. What the platform costs
 * beyond this is the figure the benchmark tracks.
 */
export async function startBareServer(template: Record<string, unknown>): Promise<BareServer> {
  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>('/bare/:id', async (req) => ({ ...template, id: req.params.id }));
  app.post('/bare', async (req, reply) => reply.code(201).send(req.body));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: () => app.close() };
}
