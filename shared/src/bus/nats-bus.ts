import { NoRespondersError, RequestError, TimeoutError, connect, headers as natsHeaders } from '@nats-io/transport-node';
import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Bus, BusHeaders, BusMessage, BusSubscription, SubscribeOptions } from './bus.js';
import { BusRequestError, parsePayload, parseReply, parseRequest } from './bus.js';
import type { Payload, ReplyPayload, RequestName, RequestPayload, SubjectName } from './subjects.js';
import { REQUESTS } from './subjects.js';

const TRACE_HEADER = 'X-Trace-Id';
/** Set on a reply when the responder threw: the requester gets `responder-failed`, not a parse error. */
const FAILED_HEADER = 'X-Bus-Error';

function toHeaders(headers: BusHeaders): MsgHdrs {
  const h = natsHeaders();
  if (headers.traceId) h.set(TRACE_HEADER, headers.traceId);
  return h;
}

function fromMsg(m: Msg): BusHeaders {
  const traceId = m.headers?.get(TRACE_HEADER) || undefined;
  return traceId ? { traceId } : {};
}

/** The bus over a NATS cluster (NATS_URL set). Same contract as {@link InProcessBus}. */
export class NatsBus implements Bus {
  readonly kind = 'nats' as const;
  private up = true;
  private constructor(
    private readonly nc: NatsConnection,
    private readonly onHandlerError: (err: unknown, subject: string) => void,
    /** `"<prefix>."` or empty: keeps several platforms (or test runs) apart on one NATS cluster. */
    private readonly prefix: string,
  ) {
    // The iterator ends when the connection is closed.
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') this.up = false;
        else if (s.type === 'reconnect') this.up = true;
      }
    })();
  }

  get connected(): boolean {
    return this.up && !this.nc.isClosed();
  }

  /**
   * Connects to one or more comma-separated NATS URLs. `subjectPrefix` (one token, e.g.
   * `staging`) is put in front of every subject, so installations sharing a cluster never
   * answer each other's requests.
   */
  static async connect(url: string, opts: { name?: string; onHandlerError?: (err: unknown, subject: string) => void; subjectPrefix?: string } = {}): Promise<NatsBus> {
    if (opts.subjectPrefix !== undefined && opts.subjectPrefix !== '' && !/^[A-Za-z0-9_-]+$/.test(opts.subjectPrefix)) {
      throw new Error('NATS subject prefix must be one token of letters, digits, _ and -');
    }
    const nc = await connect({ servers: url.split(',').map((s) => s.trim()), name: opts.name, maxReconnectAttempts: -1 });
    return new NatsBus(nc, opts.onHandlerError ?? (() => {}), opts.subjectPrefix ? `${opts.subjectPrefix}.` : '');
  }

  private local(subject: string): string {
    return this.prefix && subject.startsWith(this.prefix) ? subject.slice(this.prefix.length) : subject;
  }

  async publish<N extends SubjectName>(_name: N, subject: string, payload: Payload<N>, headers: BusHeaders = {}): Promise<void> {
    this.nc.publish(this.prefix + subject, JSON.stringify(payload), { headers: toHeaders(headers) });
  }

  subscribe<N extends SubjectName>(name: N, pattern: string, handler: (msg: BusMessage<N>) => void | Promise<void>, opts: SubscribeOptions = {}): BusSubscription {
    return this.serve(pattern, opts.queue, async (m) => {
      await handler({ subject: this.local(m.subject), payload: parsePayload(name, m.json()), headers: fromMsg(m) });
    });
  }

  async request<R extends RequestName>(name: R, payload: RequestPayload<R>, opts: { timeoutMs?: number; headers?: BusHeaders } = {}): Promise<ReplyPayload<R>> {
    const subject = REQUESTS[name].subject;
    let reply: Msg;
    try {
      reply = await this.nc.request(this.prefix + subject, JSON.stringify(payload), { timeout: opts.timeoutMs ?? 5000, headers: toHeaders(opts.headers ?? {}) });
    } catch (err) {
      if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) throw new BusRequestError('no-responders', subject);
      if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) throw new BusRequestError('timeout', subject);
      throw err;
    }
    if (reply.headers?.get(FAILED_HEADER)) throw new BusRequestError('responder-failed', subject);
    return parseReply(name, reply.json());
  }

  respond<R extends RequestName>(name: R, handler: (payload: RequestPayload<R>, headers: BusHeaders) => Promise<ReplyPayload<R>>, opts: SubscribeOptions = {}): BusSubscription {
    const subject = REQUESTS[name].subject;
    return this.serve(subject, opts.queue ?? 'responders', async (m) => {
      try {
        const reply = await handler(parseRequest(name, m.json()), fromMsg(m));
        m.respond(JSON.stringify(reply));
      } catch (err) {
        const h = natsHeaders();
        h.set(FAILED_HEADER, 'responder-failed');
        m.respond('', { headers: h });
        throw err;
      }
    });
  }

  private serve(pattern: string, queue: string | undefined, handle: (m: Msg) => Promise<void>): BusSubscription {
    const sub: Subscription = this.nc.subscribe(this.prefix + pattern, queue ? { queue } : {});
    const running = new Set<Promise<void>>();
    const loop = (async () => {
      for await (const m of sub) {
        const run = (async () => {
          try {
            await handle(m);
          } catch (err) {
            this.onHandlerError(err, this.local(m.subject));
          }
        })();
        running.add(run);
        void run.finally(() => running.delete(run));
      }
    })();
    return {
      close: async () => {
        sub.unsubscribe();
        await loop;
        await Promise.all(running);
      },
    };
  }

  /** Waits until every published message has reached the server. */
  async flush(): Promise<void> {
    await this.nc.flush();
  }

  async close(): Promise<void> {
    await this.nc.drain();
  }
}
