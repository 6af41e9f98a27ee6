import type { SubjectName, Payload } from './subjects.js';
import { SUBJECTS } from './subjects.js';

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

/**
 * The bus between control plane and gateways. Two implementations with one behaviour:
 * in-process (one machine, no NATS_URL) and NATS (several machines). Delivery is
 * at-most-once fan-out; durable work goes through the job queue, not through here.
 */
export interface Bus {
  readonly kind: 'in-process' | 'nats';
  publish<N extends SubjectName>(name: N, subject: string, payload: Payload<N>, headers?: BusHeaders): Promise<void>;
  /** Subscribe to a subject or wildcard (`*` one token, `>` the rest) of the named kind. */
  subscribe<N extends SubjectName>(name: N, pattern: string, handler: (msg: BusMessage<N>) => void | Promise<void>): BusSubscription;
  close(): Promise<void>;
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
