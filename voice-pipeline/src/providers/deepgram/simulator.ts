/**
 * A protocol-faithful Deepgram live-transcription server on loopback (STYLE.md §4): a real
 * HTTP server with a `ws` WebSocketServer on `/v1/listen` speaking reference/stt.md §1.
 * Each speech segment it hears becomes the next line of the script registered for the
 * call (`extra=call_sid:<key>`), so tests, sandbox mode and load tests get deterministic
 * transcripts from real audio. Faults (latency, refused upgrades, dropped sockets, server
 * closes) are switched on with `setFaults` or over HTTP (`POST /__sim/faults`).
 */
import { createHash, randomUUID } from 'node:crypto';
import { STATUS_CODES, createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';
import { handleControlRequest } from './sim-control-api.js';
import { DEFAULT_TUNING, SimTranscriber } from './sim-transcriber.js';
import type { SimTranscriberTuning } from './sim-transcriber.js';
import { deepgramControlMessageSchema, parseExtra, parseListenQuery } from './wire.js';
import type { DeepgramServerMessage, ListenSettings } from './wire.js';

/** Faults applied to connections; every field is independent. */
export interface DeepgramSimulatorFaults {
  /** Latency added before every server message is sent (order is kept). */
  firstResultDelayMs: number;
  /** Refuse the next `count` upgrades with this HTTP status (401, 429, 500 …). */
  rejectUpgradeStatus: { status: number; count: number } | null;
  /** Hold every upgrade this long before answering (slow connect, for timeouts and aborts). */
  upgradeDelayMs: number;
  /** Destroy the TCP socket this long after a connection opens, without a close frame. */
  dropAfterMs: number | null;
  /** Close with `closeCode` this long after a connection opens. */
  closeAfterMs: number | null;
  closeCode: number;
}

const NO_FAULTS: DeepgramSimulatorFaults = { firstResultDelayMs: 0, rejectUpgradeStatus: null, upgradeDelayMs: 0, dropAfterMs: null, closeAfterMs: null, closeCode: 1011 };

/** What one upgrade attempt looked like and what happened on it, for contract tests. */
export interface SimConnection {
  /** 1-based, in order of arrival. */
  id: number;
  requestId: string;
  /** The `call_sid` from `extra`, if any: the key of the script used. */
  callKey: string | undefined;
  query: URLSearchParams;
  authorization: string | undefined;
  /** 101 when upgraded, else the HTTP status the upgrade was refused with. */
  status: number;
  audioBytes: number;
  /** `type` of each text control message received, in order (raw text if unparsable). */
  controlMessages: string[];
  /** Server messages actually sent, in order. */
  sent: DeepgramServerMessage[];
  closed: boolean;
  closeCode: number | undefined;
  closeReason: string | undefined;
}

export interface DeepgramSimulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** The key clients must present (`Authorization: Token <key>`). Default `sim-deepgram-key`. */
  apiKey?: string;
  /** Close 1011 (NET-0001) when neither audio nor KeepAlive came for this long. Default 10,000. */
  idleTimeoutMs?: number;
  /** Transcript used when a call has no (more) script lines; `index` counts from 0 per connection. */
  defaultUtterance?: (index: number) => string;
  /** Recogniser tuning (minSpeechMs, interimIntervalMs, …). */
  tuning?: Partial<SimTranscriberTuning>;
}

type Outbound = { kind: 'message'; message: DeepgramServerMessage } | { kind: 'close'; code: number; reason: string };

/** The simulator. Start with `DeepgramSimulator.start()`, point the adapter's `baseUrl` at `url`, `close()` when done. */
export class DeepgramSimulator {
  readonly apiKey: string;
  /** Every upgrade attempt, in order. Cleared by `reset()`. */
  readonly connections: SimConnection[] = [];
  private faults: DeepgramSimulatorFaults = { ...NO_FAULTS };
  private readonly scripts = new Map<string, string[]>();
  private readonly wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => (protocols.has('token') ? 'token' : false) });
  private readonly sockets = new Set<Duplex>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private nextId = 1;

  private constructor(
    private readonly server: Server,
    private readonly options: DeepgramSimulatorOptions,
  ) {
    this.apiKey = options.apiKey ?? 'sim-deepgram-key';
  }

  /** Starts listening; resolves when the port is bound. */
  static async start(opts: DeepgramSimulatorOptions = {}): Promise<DeepgramSimulator> {
    const server = createServer();
    const sim = new DeepgramSimulator(server, opts);
    server.on('request', (req, res) => void handleControlRequest(sim, req, res));
    server.on('upgrade', (req, socket, head) => sim.onUpgrade(req, socket, head));
    server.on('connection', (s: Socket) => {
      sim.sockets.add(s);
      s.on('close', () => sim.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
    });
    return sim;
  }

  private get address(): AddressInfo {
    return this.server.address() as AddressInfo;
  }

  /** HTTP base to give the adapter as `baseUrl`, e.g. `http://127.0.0.1:PORT`. */
  get url(): string {
    return `http://${this.hostForUrl()}:${this.address.port}`;
  }

  /** The live endpoint, `ws://127.0.0.1:PORT/v1/listen`. */
  get wsUrl(): string {
    return `ws://${this.hostForUrl()}:${this.address.port}/v1/listen`;
  }

  private hostForUrl(): string {
    const a = this.address.address;
    return a.includes(':') ? `[${a}]` : a;
  }

  /** Script for a call: each speech segment heard on a connection tagged `call_sid:<callKey>` takes the next line. Replaces any earlier script. */
  setScript(callKey: string, utterances: string[]): void {
    this.scripts.set(callKey, [...utterances]);
  }

  /** Merges faults into the current set. */
  setFaults(partial: Partial<DeepgramSimulatorFaults>): void {
    this.faults = { ...this.faults, ...partial };
  }

  resetFaults(): void {
    this.faults = { ...NO_FAULTS };
  }

  /** Connections currently open. */
  get openConnections(): number {
    return this.wss.clients.size;
  }

  /** Current faults (a copy). */
  getFaults(): DeepgramSimulatorFaults {
    return { ...this.faults };
  }

  /** Faults, scripts and recorded connections back to the initial state (open connections stay open). */
  reset(): void {
    this.resetFaults();
    this.scripts.clear();
    this.connections.length = 0;
  }

  /** Stops the server and drops every connection at once. */
  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const ws of this.wss.clients) ws.terminate();
    for (const s of this.sockets) s.destroy();
    this.wss.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private later(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  private cancel(t: NodeJS.Timeout | undefined): void {
    if (!t) return;
    clearTimeout(t);
    this.timers.delete(t);
  }

  // ---------- live endpoint ----------

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://sim');
    if (url.pathname !== '/v1/listen') {
      rejectUpgrade(socket, 404, 'NOT_FOUND', `No WebSocket endpoint at ${url.pathname}`, randomUUID());
      return;
    }
    const extra = parseExtra(url.searchParams.getAll('extra'));
    const rec: SimConnection = {
      id: this.nextId++,
      requestId: randomUUID(),
      callKey: extra['call_sid'],
      query: url.searchParams,
      authorization: req.headers.authorization,
      status: 101,
      audioBytes: 0,
      controlMessages: [],
      sent: [],
      closed: false,
      closeCode: undefined,
      closeReason: undefined,
    };
    this.connections.push(rec);
    const proceed = (): void => {
      if (socket.destroyed) return;
      const refuse = (status: number, code: string, msg: string): void => {
        rec.status = status;
        rec.closed = true;
        rejectUpgrade(socket, status, code, msg, rec.requestId);
      };
      const fault = this.faults.rejectUpgradeStatus;
      if (fault && fault.count > 0) {
        this.faults.rejectUpgradeStatus = fault.count > 1 ? { ...fault, count: fault.count - 1 } : null;
        return refuse(fault.status, 'SIMULATED_FAULT', `Simulated HTTP ${fault.status}`);
      }
      if (!this.authorized(req)) return refuse(401, 'INVALID_AUTH', 'Invalid credentials.');
      const settings = parseListenQuery(url.searchParams);
      if (!settings.success) return refuse(400, 'INVALID_QUERY_PARAMETER', settings.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, rec, settings.data));
    };
    const delay = this.faults.upgradeDelayMs;
    if (delay > 0) this.later(delay, proceed);
    else proceed();
  }

  /** `Authorization: Token <key>`, or the browser form: subprotocols `token, <key>` (reference/stt.md §1.1). */
  private authorized(req: IncomingMessage): boolean {
    const header = req.headers.authorization ?? '';
    const m = /^(token|bearer)\s+(.+)$/i.exec(header.trim());
    if (m && m[2] === this.apiKey) return true;
    const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    const i = protocols.indexOf('token');
    return i >= 0 && protocols[i + 1] === this.apiKey;
  }

  private onConnection(ws: WebSocket, rec: SimConnection, settings: ListenSettings): void {
    const startedAt = Date.now();
    let lastActivity = startedAt;
    const sha = createHash('sha256');
    const outbound: { dueAt: number; item: Outbound }[] = [];
    let pump: NodeJS.Timeout | undefined;
    let closing = false;

    const deliver = (item: Outbound): void => {
      if (ws.readyState !== ws.OPEN) return;
      if (item.kind === 'close') ws.close(item.code, item.reason);
      else {
        rec.sent.push(item.message);
        ws.send(JSON.stringify(item.message));
      }
    };
    const runPump = (): void => {
      pump = undefined;
      while (outbound.length > 0 && outbound[0]!.dueAt <= Date.now()) deliver(outbound.shift()!.item);
      if (outbound.length > 0) pump = this.later(Math.max(0, outbound[0]!.dueAt - Date.now()), runPump);
    };
    // One ordered queue: a latency fault delays every message but never reorders them.
    const enqueue = (item: Outbound): void => {
      const delay = this.faults.firstResultDelayMs;
      if (delay === 0 && outbound.length === 0) return deliver(item);
      const last = outbound[outbound.length - 1];
      outbound.push({ dueAt: Math.max(Date.now() + delay, last?.dueAt ?? 0), item });
      if (!pump) pump = this.later(Math.max(0, outbound[0]!.dueAt - Date.now()), runPump);
    };

    let lineIndex = 0;
    const nextLine = (): string => {
      const script = rec.callKey === undefined ? undefined : this.scripts.get(rec.callKey);
      const line = script?.shift();
      if (line !== undefined) return line;
      const index = lineIndex++;
      return this.options.defaultUtterance ? this.options.defaultUtterance(index) : `hello number ${index + 1}`;
    };
    const model = settings.model ?? 'base';
    const transcriber = new SimTranscriber(settings, { ...DEFAULT_TUNING, ...this.options.tuning }, nextLine, (m) => enqueue({ kind: 'message', message: m }), {
      request_id: rec.requestId,
      model_info: { name: `general-${model}`, version: 'simulated', arch: model },
      model_uuid: '00000000-0000-4000-8000-000000000000',
    });

    const idleTimeoutMs = this.options.idleTimeoutMs ?? 10_000;
    const idle = setInterval(
      () => {
        if (!closing && Date.now() - lastActivity >= idleTimeoutMs) {
          closing = true;
          // reference/stt.md §1.2: no audio and no KeepAlive for 10 s → NET-0001.
          ws.close(1011, 'NET-0001: no audio or KeepAlive received within the timeout window');
        }
      },
      Math.min(250, Math.max(10, idleTimeoutMs / 5)),
    );
    const drop = this.faults.dropAfterMs === null ? undefined : this.later(this.faults.dropAfterMs, () => ws.terminate());
    const closeCode = this.faults.closeCode;
    const closer = this.faults.closeAfterMs === null ? undefined : this.later(this.faults.closeAfterMs, () => ws.close(closeCode, 'simulated server close'));

    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (closing) return;
      const bytes = toBytes(data);
      if (isBinary) {
        lastActivity = Date.now();
        rec.audioBytes += bytes.length;
        sha.update(bytes);
        transcriber.audio(bytes);
        return;
      }
      const text = Buffer.from(bytes).toString('utf8');
      let type = text;
      try {
        const parsed = deepgramControlMessageSchema.safeParse(JSON.parse(text));
        if (parsed.success) type = parsed.data.type;
      } catch {
        // not JSON: recorded raw and otherwise ignored
      }
      rec.controlMessages.push(type);
      if (type === 'KeepAlive') lastActivity = Date.now();
      else if (type === 'Finalize') transcriber.finalize();
      else if (type === 'CloseStream') {
        closing = true;
        transcriber.closeStream();
        enqueue({
          kind: 'message',
          message: {
            type: 'Metadata',
            transaction_key: 'deprecated',
            request_id: rec.requestId,
            sha256: sha.digest('hex'),
            created: new Date(startedAt).toISOString(),
            duration: transcriber.receivedMs / 1000,
            channels: settings.channels,
          },
        });
        enqueue({ kind: 'close', code: 1000, reason: '' });
      }
    });
    ws.on('error', () => {
      // a client that vanishes mid-frame; the close handler records it
    });
    ws.on('close', (code: number, reason: Buffer) => {
      rec.closed = true;
      rec.closeCode = code;
      rec.closeReason = reason.toString('utf8');
      clearInterval(idle);
      this.cancel(drop);
      this.cancel(closer);
      this.cancel(pump);
    });
  }
}

function rejectUpgrade(socket: Duplex, status: number, errCode: string, errMsg: string, requestId: string): void {
  const body = JSON.stringify({ err_code: errCode, err_msg: errMsg, request_id: requestId });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `dg-error: ${errMsg.replace(/[\r\n]/g, ' ')}\r\n` +
      `dg-request-id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}
