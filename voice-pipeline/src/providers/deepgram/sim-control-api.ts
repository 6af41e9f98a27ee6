/**
 * HTTP control API of the Deepgram simulator, on the same port as `/v1/listen`, so another
 * process (sandbox mode, the load generator) can drive it:
 * `GET /__sim/health`, `GET /__sim/connections`, `POST /__sim/script {callKey, utterances}`,
 * `POST /__sim/faults {…partial faults}`, `POST /__sim/reset`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { DeepgramSimulator, DeepgramSimulatorFaults, SimConnection } from './simulator.js';

const faultsSchema = z
  .object({
    firstResultDelayMs: z.number().min(0),
    rejectUpgradeStatus: z.object({ status: z.number().int().min(400).max(599), count: z.number().int().min(0) }).nullable(),
    upgradeDelayMs: z.number().min(0),
    dropAfterMs: z.number().min(0).nullable(),
    closeAfterMs: z.number().min(0).nullable(),
    closeCode: z.number().int().min(1000).max(4999),
  })
  .partial()
  .strict();
const scriptSchema = z.object({ callKey: z.string().min(1), utterances: z.array(z.string()) }).strict();

/** Answers one plain HTTP request to the simulator (404 for anything but the control routes). */
export async function handleControlRequest(sim: DeepgramSimulator, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://sim').pathname;
  const json = (status: number, body?: unknown): void => {
    res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
  try {
    if (req.method === 'GET' && path === '/__sim/health') return json(200, { ok: true, connections: sim.connections.length, open: sim.openConnections });
    if (req.method === 'GET' && path === '/__sim/connections') return json(200, sim.connections.map(describeConnection));
    if (req.method === 'POST' && path === '/__sim/reset') {
      sim.reset();
      return json(204);
    }
    if (req.method === 'POST' && path === '/__sim/script') {
      const parsed = scriptSchema.safeParse(await readJson(req));
      if (!parsed.success) return json(400, { error: issues(parsed.error) });
      sim.setScript(parsed.data.callKey, parsed.data.utterances);
      return json(204);
    }
    if (req.method === 'POST' && path === '/__sim/faults') {
      const parsed = faultsSchema.safeParse(await readJson(req));
      if (!parsed.success) return json(400, { error: issues(parsed.error) });
      sim.setFaults(parsed.data as Partial<DeepgramSimulatorFaults>);
      return json(200, sim.getFaults());
    }
    return json(404, { err_code: 'NOT_FOUND', err_msg: `No route for ${req.method} ${path}` });
  } catch {
    return json(400, { error: 'body must be JSON (at most 1 MB)' });
  }
}

function issues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1_000_000) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as unknown);
}

/** A connection as JSON: the query becomes `{ key: [values] }`. */
function describeConnection(c: SimConnection): Record<string, unknown> {
  const query: Record<string, string[]> = {};
  for (const [k, v] of c.query) (query[k] ??= []).push(v);
  return { ...c, query };
}
