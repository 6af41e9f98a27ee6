/**
 * What the three carrier simulators share (twilio/, telnyx/, vonage/ `simulator.ts`): a real
 * HTTP server on 127.0.0.1 with an ephemeral port, the request log tests assert the wire on,
 * and the fault controls (`failNext`, `latencyMs`, `hang`). Each carrier supplies its auth
 * check, its error body and its routes.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** The credentials a request carried, as the carrier would read them. */
export type SimAuth = { scheme: 'basic'; user: string; password: string } | { scheme: 'bearer'; token: string } | null;

/** One request a carrier simulator received, as it was on the wire. */
export interface CarrierSimRequest {
  method: string;
  /** Path without the query string (`/2010-04-01/Accounts/AC…/IncomingPhoneNumbers.json`). */
  path: string;
  /** Query parameters; a repeated name (`filter[features][]`) collects an array. */
  query: Record<string, string | string[]>;
  /** Parsed body: an object of strings for form bodies, the JSON value for JSON bodies, null when empty. */
  body: unknown;
  /** The Authorization header, decoded. */
  auth: SimAuth;
  /** Lower-cased header names. */
  headers: IncomingHttpHeaders;
  /** HTTP status answered; null while hanging (or never answered). */
  status: number | null;
}

/** What a route answers: a status and a JSON body (none for 204). */
export interface SimReply {
  status: number;
  body?: unknown;
}

/** The parsed request a carrier route sees. */
export type SimRequest = Omit<CarrierSimRequest, 'status' | 'headers'>;

/** Base of the carrier simulators: listening, logging, faults; subclasses answer. */
export abstract class CarrierSimServer {
  /** Every request received, oldest first (tests assert what went over the wire). */
  readonly requests: CarrierSimRequest[] = [];
  /** Delay before every answer (ms). */
  latencyMs = 0;
  /** Read requests and never answer them (client timeouts); `close()` ends them. */
  hang = false;
  private failures: { count: number; status: number; path: RegExp | undefined } | null = null;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private baseUrl = '';

  /** `http://127.0.0.1:<port>`, without a trailing slash; set once started. */
  get url(): string {
    return this.baseUrl;
  }

  /**
   * Answers the next `count` requests (those whose path matches `path`, when given) with
   * `status` and the carrier's error body for it; auth is not checked first.
   */
  failNext(count: number, status: number, path?: RegExp): void {
    this.failures = count > 0 ? { count, status, path } : null;
  }

  /** Requests whose path matches, in order (a convenience for assertions). */
  requestsTo(method: string, path: RegExp): CarrierSimRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  /** Starts listening on 127.0.0.1 with an ephemeral port. */
  protected async listen(): Promise<void> {
    const server = createServer((req, res) => void this.onRequest(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Stops listening and destroys open connections (hanging requests included). */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Null when the credentials are the configured ones, else the carrier's refusal (401 and its body). */
  protected abstract checkAuth(req: SimRequest): SimReply | null;

  /** The carrier's error body for `status` (used by `failNext` and the routes). */
  protected abstract errorBody(status: number, detail?: string): unknown;

  /** Answers an authenticated request (404 with the carrier's body when nothing matches). */
  protected abstract route(req: SimRequest): SimReply;

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    const entry: CarrierSimRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: collect(url.searchParams),
      body: parseBody(raw, req.headers['content-type']),
      auth: parseAuth(req.headers.authorization),
      headers: req.headers,
      status: null,
    };
    this.requests.push(entry);
    if (this.hang) return;
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    let reply: SimReply;
    if (this.failures && (!this.failures.path || this.failures.path.test(entry.path))) {
      const { status, path } = this.failures;
      this.failures = this.failures.count > 1 ? { count: this.failures.count - 1, status, path } : null;
      reply = { status, body: this.errorBody(status) };
    } else {
      const request: SimRequest = { method: entry.method, path: entry.path, query: entry.query, body: entry.body, auth: entry.auth };
      try {
        reply = this.checkAuth(request) ?? this.route(request);
      } catch {
        // A simulator bug answers like a carrier fault rather than leaving the client hanging.
        reply = { status: 500, body: this.errorBody(500) };
      }
    }
    entry.status = reply.status;
    if (res.destroyed) return;
    if (reply.body === undefined) {
      res.writeHead(reply.status).end();
      return;
    }
    res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function collect(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of params) {
    const prev = out[key];
    out[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

function parseBody(raw: string, contentType: string | undefined): unknown {
  if (raw.length === 0) return null;
  if (contentType?.includes('application/x-www-form-urlencoded')) return collect(new URLSearchParams(raw));
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function parseAuth(header: string | undefined): SimAuth {
  if (!header) return null;
  const [scheme, value = ''] = header.split(/\s+/, 2);
  if (scheme?.toLowerCase() === 'bearer') return { scheme: 'bearer', token: value };
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? null : { scheme: 'basic', user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return null;
}

/** One string parameter of a query or form body (the first when repeated). */
export function param(source: unknown, name: string): string | undefined {
  if (typeof source !== 'object' || source === null) return undefined;
  const v = (source as Record<string, unknown>)[name];
  if (Array.isArray(v)) return typeof v[0] === 'string' ? v[0] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** Every value of a possibly repeated parameter. */
export function params(source: unknown, name: string): string[] {
  if (typeof source !== 'object' || source === null) return [];
  const v = (source as Record<string, unknown>)[name];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return typeof v === 'string' ? [v] : [];
}
