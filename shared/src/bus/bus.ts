import type { SubjectName, Payload, RequestName, RequestPayload, ReplyPayload } from './subjects.js';
import { REQUESTS, SUBJECTS } from './subjects.js';

/** Headers carried with a message; `traceId` joins gateway and API logs (STYLE.md §8). */
export interface BusHeaders {
  traceId?: string;
}

export interface BusMessage<N extends SubjectName> {
  subject: string;
  payload: Payload<N>;
  headers: BusHeaders;
}

/** A subscription; `close()` stops delivery and resolves once no handler is running. */
export interface BusSubscription {
  close(): Promise<void>;
}

/** Options of a subscription. */
export interface SubscribeOptions {
  /**
   * Queue group: each message goes to one member of the group instead of to all. Control
   * planes persist call data as the group `control-plane`, so N replicas store it once.
   */
  queue?: string;
}

/** A request that got no reply: nobody is listening, or the responder was too slow. */
export class BusRequestError extends Error {
  constructor(
    readonly code: 'no-responders' | 'timeout' | 'responder-failed',
    readonly subject: string,
  ) {
    super(`bus request on ${subject} failed: ${code}`);
    this.name = 'BusRequestError';
  }
}

/**
 * The bus between control plane and gateways. Two implementations with one behaviour:
 * in-process (one machine, no NATS_URL) and NATS (several machines). Delivery is
 * at-most-once fan-out; durable work goes through the job queue, not through here.
 */
export interface Bus {
  readonly kind: 'in-process' | 'nats';
  /**
   * Whether this process is connected now (NATS: false from a disconnect until the client has
   * reconnected; in-process: always). What others published meanwhile did not reach it.
   */
  readonly connected: boolean;
  publish<N extends SubjectName>(name: N, subject: string, payload: Payload<N>, headers?: BusHeaders): Promise<void>;
  /** Subscribe to a subject or wildcard (`*` one token, `>` the rest) of the named kind. */
  subscribe<N extends SubjectName>(name: N, pattern: string, handler: (msg: BusMessage<N>) => void | Promise<void>, opts?: SubscribeOptions): BusSubscription;
  /**
   * Asks the one responder of a request subject (see `REQUESTS`) and waits for its reply.
   * Rejects with {@link BusRequestError} when nobody answers within `timeoutMs` (default 5000).
   */
  request<R extends RequestName>(name: R, payload: RequestPayload<R>, opts?: { timeoutMs?: number; headers?: BusHeaders }): Promise<ReplyPayload<R>>;
  /** Answers requests of one kind; responders form the queue group `opts.queue` (default `responders`). */
  respond<R extends RequestName>(name: R, handler: (payload: RequestPayload<R>, headers: BusHeaders) => Promise<ReplyPayload<R>>, opts?: SubscribeOptions): BusSubscription;
  close(): Promise<void>;
}

export function parseRequest<R extends RequestName>(name: R, raw: unknown): RequestPayload<R> {
  return REQUESTS[name].request.parse(raw) as RequestPayload<R>;
}

export function parseReply<R extends RequestName>(name: R, raw: unknown): ReplyPayload<R> {
  return REQUESTS[name].reply.parse(raw) as ReplyPayload<R>;
}

/** Parses a payload that came off the wire; throws a ZodError naming the bad field. */
export function parsePayload<N extends SubjectName>(name: N, raw: unknown): Payload<N> {
  return SUBJECTS[name].schema.parse(raw) as Payload<N>;
}

/** NATS-style subject matching: `*` matches one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
