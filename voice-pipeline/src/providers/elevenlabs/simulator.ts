/**
 * A protocol-faithful ElevenLabs TTS simulator on loopback: the `stream-input` and
 * `multi-stream-input` WebSockets (reference/tts.md §1, §1.3), a plain HTTP `/stream` (§2), fault controls and a record of
 * everything clients sent. Tests, sandbox mode and load tests point `baseUrl` at `url`.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { renderGeneration } from './sim-audio.js';
import { MultiSimSession } from './sim-multi-session.js';
import { DEFAULT_FAULTS, SimSession } from './sim-session.js';
import type { ElevenLabsSimConnection, ElevenLabsSimFaults } from './sim-session.js';
import { rawFormatSpec } from '../../audio/output-formats.js';

export type { ElevenLabsSimConnection, ElevenLabsSimFaults } from './sim-session.js';

/** One request to the HTTP `/stream` endpoint. */
export interface ElevenLabsSimHttpRequest {
  voiceId: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

const STREAM_INPUT_PATH = /^\/v1\/text-to-speech\/([^/]+)\/(stream-input|multi-stream-input)$/;
const HTTP_STREAM_PATH = /^\/v1\/text-to-speech\/([^/]+)\/stream$/;
const DEFAULT_API_KEY = 'sim-elevenlabs-key';

/**
 * Start with `ElevenLabsSimulator.start()`, stop with `close()`. The key is required in the
 * `xi-api-key` header or, when no header is sent, as `xi_api_key`/`xi-api-key` in the first
 * message. Only raw output formats (`ulaw_8000`, `alaw_8000`, `pcm_*`) are produced; others
 * get a 400 at the upgrade.
 *
 * Control API on the same port: `POST /__sim/faults` (JSON partial faults), `POST /__sim/reset`
 * (faults and records), `GET /__sim/health`, `GET /__sim/connections`.
 */
export class ElevenLabsSimulator {
  /** `http://127.0.0.1:PORT`: pass as the adapter's `baseUrl`. */
  readonly url: string;
  readonly apiKey: string;
  /** Every `stream-input` and `multi-stream-input` socket, oldest first. */
  readonly connections: ElevenLabsSimConnection[] = [];
  /** Every HTTP `/stream` request, oldest first. */
  readonly httpRequests: ElevenLabsSimHttpRequest[] = [];
  private faults: ElevenLabsSimFaults = { ...DEFAULT_FAULTS };
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly sockets = new Set<Socket>();
  private nextId = 1;

  private constructor(server: Server, wss: WebSocketServer, apiKey: string) {
    this.server = server;
    this.wss = wss;
    this.apiKey = apiKey;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Listens on 127.0.0.1 (`port` 0 or absent = any free port). */
  static async start(opts: { port?: number; apiKey?: string } = {}): Promise<ElevenLabsSimulator> {
    const server = createServer();
    const wss = new WebSocketServer({ noServer: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    const sim = new ElevenLabsSimulator(server, wss, opts.apiKey ?? DEFAULT_API_KEY);
    server.on('request', (req, res) => void sim.onRequest(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => sim.onUpgrade(req, socket, head));
    server.on('connection', (socket: Socket) => {
      sim.sockets.add(socket);
      socket.on('close', () => sim.sockets.delete(socket));
    });
    return sim;
  }

  /** Total characters synthesised over all sockets. */
  get charactersSynthesised(): number {
    return this.connections.reduce((n, c) => n + c.charactersSynthesised, 0);
  }

  /** The most recent socket, if any. */
  get lastConnection(): ElevenLabsSimConnection | undefined {
    return this.connections.at(-1);
  }

  /** Merges faults; they apply to sockets opened (and generations started) afterwards. */
  setFaults(partial: Partial<ElevenLabsSimFaults>): void {
    this.faults = { ...this.faults, ...partial };
  }

  resetFaults(): void {
    this.faults = { ...DEFAULT_FAULTS };
  }

  /** Faults back to defaults and records cleared. */
  reset(): void {
    this.resetFaults();
    this.connections.length = 0;
    this.httpRequests.length = 0;
  }

  /** Drops every client at once and stops listening. */
  async close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const match = STREAM_INPUT_PATH.exec(url.pathname);
    if (match === null) return rejectUpgrade(socket, 404, { detail: { status: 'not_found', message: 'Unknown WebSocket path' } });
    const query = Object.fromEntries(url.searchParams);
    const format = rawFormatSpec(query.output_format ?? 'mp3_44100_128');
    if (format === null) {
      return rejectUpgrade(socket, 400, { detail: { status: 'invalid_output_format', message: `The simulator produces only ulaw_8000, alaw_8000 and pcm_* (got ${query.output_format ?? 'the mp3 default'})` } });
    }
    const inactivityTimeoutS = query.inactivity_timeout === undefined ? 20 : Number(query.inactivity_timeout);
    if (!Number.isFinite(inactivityTimeoutS) || inactivityTimeoutS <= 0 || inactivityTimeoutS > 180) {
      return rejectUpgrade(socket, 400, { detail: { status: 'invalid_parameters', message: 'inactivity_timeout must be between 1 and 180 seconds' } });
    }
    const headerKey = headerValue(req.headers['xi-api-key']);
    const faults = this.faults;
    const rejectAtUpgrade = headerKey !== undefined && (headerKey !== this.apiKey || faults.rejectAuth === true || faults.rejectAuth === 'upgrade');
    if (rejectAtUpgrade && faults.rejectAuth !== 'first-message') {
      return rejectUpgrade(socket, 401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    }
    const endpoint = match[2] as ElevenLabsSimConnection['endpoint'];
    const record: ElevenLabsSimConnection = {
      id: this.nextId++,
      endpoint,
      voiceId: decodeURIComponent(match[1]!),
      query,
      headers: { ...req.headers },
      messages: [],
      generations: [],
      contexts: [],
      charactersSynthesised: 0,
      closeCode: null,
      closedBy: null,
    };
    this.connections.push(record);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const setup = { record, format, apiKey: this.apiKey, headerKey, inactivityTimeoutS, faults: () => this.faults, tcp: socket };
      if (endpoint === 'multi-stream-input') new MultiSimSession(ws, setup);
      else new SimSession(ws, setup);
    });
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      if (url.pathname === '/__sim/health' && req.method === 'GET') return json(res, 200, { status: 'ok', openConnections: this.wss.clients.size });
      if (url.pathname === '/__sim/connections' && req.method === 'GET') return json(res, 200, { connections: this.connections });
      if (url.pathname === '/__sim/faults' && req.method === 'POST') {
        this.setFaults((await readJson(req)) as Partial<ElevenLabsSimFaults>);
        return json(res, 200, { faults: this.faults });
      }
      if (url.pathname === '/__sim/reset' && req.method === 'POST') {
        this.reset();
        return json(res, 200, { faults: this.faults });
      }
      const match = HTTP_STREAM_PATH.exec(url.pathname);
      if (match !== null && req.method === 'POST') return await this.httpStream(decodeURIComponent(match[1]!), url, req, res);
      return json(res, 404, { detail: { status: 'not_found', message: 'Not found' } });
    } catch {
      return json(res, 400, { detail: { status: 'invalid_request', message: 'Malformed JSON body' } });
    }
  }

  /** `POST /v1/text-to-speech/{voiceId}/stream`: the whole text in, raw audio bytes out, chunked (§2). */
  private async httpStream(voiceId: string, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = (await readJson(req)) as { text?: unknown } | null;
    const query = Object.fromEntries(url.searchParams);
    this.httpRequests.push({ voiceId, query, headers: { ...req.headers }, body });
    if (headerValue(req.headers['xi-api-key']) !== this.apiKey || this.faults.rejectAuth !== false) {
      return json(res, 401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    }
    const format = rawFormatSpec(query.output_format ?? 'mp3_44100_128');
    if (format === null) return json(res, 400, { detail: { status: 'invalid_output_format', message: 'The simulator produces only ulaw_8000, alaw_8000 and pcm_*' } });
    if (body === null || typeof body.text !== 'string' || body.text.trim().length === 0) {
      return json(res, 422, { detail: [{ loc: ['body', 'text'], msg: 'field required', type: 'value_error.missing' }] });
    }
    if (this.faults.firstByteDelayMs > 0) await new Promise((r) => setTimeout(r, this.faults.firstByteDelayMs));
    const chunks = await renderGeneration(body.text, format, 200);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'request-id': `sim-${this.nextId++}` });
    for (const chunk of chunks) res.write(chunk.audio);
    res.end();
  }
}

function rejectUpgrade(socket: Socket, status: number, body: object): void {
  const text = JSON.stringify(body);
  const reason = status === 401 ? 'Unauthorized' : status === 404 ? 'Not Found' : 'Bad Request';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  return text.length === 0 ? null : JSON.parse(text);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
