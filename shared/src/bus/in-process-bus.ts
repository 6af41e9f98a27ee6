import type { Bus, BusHeaders, BusMessage, BusSubscription } from './bus.js';
import { parsePayload, subjectMatches } from './bus.js';
import type { Payload, SubjectName } from './subjects.js';

interface Entry {
  name: SubjectName;
  pattern: string;
  handler: (msg: BusMessage<SubjectName>) => void | Promise<void>;
  running: Set<Promise<void>>;
}

/**
 * The bus for one process (no NATS_URL). Payloads go through a JSON round trip and schema
 * validation exactly as over NATS, so code that works here works across machines.
 * Handlers run asynchronously (never inside `publish`), as they would over the network.
 */
export class InProcessBus implements Bus {
  readonly kind = 'in-process' as const;
  private readonly entries = new Set<Entry>();
  private readonly onHandlerError: (err: unknown, subject: string) => void;

  constructor(opts: { onHandlerError?: (err: unknown, subject: string) => void } = {}) {
    this.onHandlerError = opts.onHandlerError ?? (() => {});
  }

  async publish<N extends SubjectName>(name: N, subject: string, payload: Payload<N>, headers: BusHeaders = {}): Promise<void> {
    const wire = JSON.stringify(payload);
    for (const entry of this.entries) {
      if (entry.name !== name || !subjectMatches(entry.pattern, subject)) continue;
      const run = (async () => {
        await new Promise<void>((resolve) => setImmediate(resolve));
        try {
          await entry.handler({ subject, payload: parsePayload(name, JSON.parse(wire)), headers: { ...headers } });
        } catch (err) {
          this.onHandlerError(err, subject);
        }
      })();
      entry.running.add(run);
      void run.finally(() => entry.running.delete(run));
    }
  }

  subscribe<N extends SubjectName>(name: N, pattern: string, handler: (msg: BusMessage<N>) => void | Promise<void>): BusSubscription {
    const entry: Entry = { name, pattern, handler: handler as Entry['handler'], running: new Set() };
    this.entries.add(entry);
    return {
      close: async () => {
        this.entries.delete(entry);
        await Promise.all(entry.running);
      },
    };
  }

  async close(): Promise<void> {
    const all = [...this.entries];
    this.entries.clear();
    await Promise.all(all.flatMap((e) => [...e.running]));
  }
}
