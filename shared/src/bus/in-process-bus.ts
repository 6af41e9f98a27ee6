import type { Bus, BusHeaders, BusMessage, BusSubscription, SubscribeOptions } from './bus.js';
import { BusRequestError, parsePayload, parseReply, parseRequest, subjectMatches } from './bus.js';
import type { Payload, ReplyPayload, RequestName, RequestPayload, SubjectName } from './subjects.js';
import { REQUESTS } from './subjects.js';

interface Entry {
  name: SubjectName;
  pattern: string;
  queue: string | undefined;
  handler: (msg: BusMessage<SubjectName>) => void | Promise<void>;
  running: Set<Promise<void>>;
}

interface Responder {
  name: RequestName;
  handler: (payload: never, headers: BusHeaders) => Promise<unknown>;
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The bus for one process (no NATS_URL). Payloads go through a JSON round trip and schema
 * validation exactly as over NATS, so code that works here works across machines.
 * Handlers run asynchronously (never inside `publish`), as they would over the network.
 */
export class InProcessBus implements Bus {
  readonly kind = 'in-process' as const;
  /** One process: nothing to be cut off from. */
  readonly connected = true;
  private readonly entries = new Set<Entry>();
  private readonly responders: Responder[] = [];
  private readonly queueTurn = new Map<string, number>();
  private readonly onHandlerError: (err: unknown, subject: string) => void;

  constructor(opts: { onHandlerError?: (err: unknown, subject: string) => void } = {}) {
    this.onHandlerError = opts.onHandlerError ?? (() => {});
  }

  async publish<N extends SubjectName>(name: N, subject: string, payload: Payload<N>, headers: BusHeaders = {}): Promise<void> {
    const wire = JSON.stringify(payload);
    const matching = [...this.entries].filter((e) => e.name === name && subjectMatches(e.pattern, subject));
    const groups = new Map<string, Entry[]>();
    const targets: Entry[] = [];
    for (const e of matching) {
      if (e.queue === undefined) targets.push(e);
      else groups.set(e.queue, [...(groups.get(e.queue) ?? []), e]);
    }
    // A queue group gets each message once, round-robin, as NATS spreads it.
    for (const [queue, members] of groups) {
      const turn = (this.queueTurn.get(queue) ?? 0) % members.length;
      this.queueTurn.set(queue, turn + 1);
      targets.push(members[turn]!);
    }
    for (const entry of targets) {
      const run = (async () => {
        await nextTick();
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

  subscribe<N extends SubjectName>(name: N, pattern: string, handler: (msg: BusMessage<N>) => void | Promise<void>, opts: SubscribeOptions = {}): BusSubscription {
    const entry: Entry = { name, pattern, queue: opts.queue, handler: handler as Entry['handler'], running: new Set() };
    this.entries.add(entry);
    return {
      close: async () => {
        this.entries.delete(entry);
        await Promise.all(entry.running);
      },
    };
  }

  async request<R extends RequestName>(name: R, payload: RequestPayload<R>, opts: { timeoutMs?: number; headers?: BusHeaders } = {}): Promise<ReplyPayload<R>> {
    const subject = REQUESTS[name].subject;
    const candidates = this.responders.filter((r) => r.name === name);
    if (candidates.length === 0) throw new BusRequestError('no-responders', subject);
    const turn = (this.queueTurn.get(`req:${name}`) ?? 0) % candidates.length;
    this.queueTurn.set(`req:${name}`, turn + 1);
    const responder = candidates[turn]!;
    const wire = JSON.stringify(payload);
    const timeoutMs = opts.timeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BusRequestError('timeout', subject)), timeoutMs);
    });
    const answer = (async () => {
      await nextTick();
      let reply: unknown;
      try {
        reply = await responder.handler(parseRequest(name, JSON.parse(wire)) as never, { ...opts.headers });
      } catch (err) {
        this.onHandlerError(err, subject);
        throw new BusRequestError('responder-failed', subject);
      }
      return parseReply(name, JSON.parse(JSON.stringify(reply)));
    })();
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  respond<R extends RequestName>(name: R, handler: (payload: RequestPayload<R>, headers: BusHeaders) => Promise<ReplyPayload<R>>): BusSubscription {
    const responder: Responder = { name, handler: handler as Responder['handler'] };
    this.responders.push(responder);
    return {
      close: async () => {
        const i = this.responders.indexOf(responder);
        if (i >= 0) this.responders.splice(i, 1);
      },
    };
  }

  async close(): Promise<void> {
    const all = [...this.entries];
    this.entries.clear();
    this.responders.length = 0;
    await Promise.all(all.flatMap((e) => [...e.running]));
  }
}
