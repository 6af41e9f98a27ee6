import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Bus, BusHeaders, BusMessage, BusSubscription } from './bus.js';
import { parsePayload } from './bus.js';
import type { Payload, SubjectName } from './subjects.js';

const TRACE_HEADER = 'X-Trace-Id';

/** The bus over a NATS cluster (NATS_URL set). Same contract as {@link InProcessBus}. */
export class NatsBus implements Bus {
  readonly kind = 'nats' as const;
  private constructor(
    private readonly nc: NatsConnection,
    private readonly onHandlerError: (err: unknown, subject: string) => void,
  ) {}

  /** Connects to one or more comma-separated NATS URLs. */
  static async connect(url: string, opts: { name?: string; onHandlerError?: (err: unknown, subject: string) => void } = {}): Promise<NatsBus> {
    const nc = await connect({ servers: url.split(',').map((s) => s.trim()), name: opts.name, maxReconnectAttempts: -1 });
    return new NatsBus(nc, opts.onHandlerError ?? (() => {}));
  }

  async publish<N extends SubjectName>(_name: N, subject: string, payload: Payload<N>, headers: BusHeaders = {}): Promise<void> {
    const h = natsHeaders();
    if (headers.traceId) h.set(TRACE_HEADER, headers.traceId);
    this.nc.publish(subject, JSON.stringify(payload), { headers: h });
  }

  subscribe<N extends SubjectName>(name: N, pattern: string, handler: (msg: BusMessage<N>) => void | Promise<void>): BusSubscription {
    const sub: Subscription = this.nc.subscribe(pattern);
    const running = new Set<Promise<void>>();
    const loop = (async () => {
      for await (const m of sub) {
        const traceId = m.headers?.get(TRACE_HEADER) || undefined;
        const run = (async () => {
          try {
            await handler({ subject: m.subject, payload: parsePayload(name, m.json()), headers: traceId ? { traceId } : {} });
          } catch (err) {
            this.onHandlerError(err, m.subject);
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
