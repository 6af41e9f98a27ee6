import type { Bus } from './bus.js';
import { InProcessBus } from './in-process-bus.js';
import { NatsBus } from './nats-bus.js';

/** NATS when a URL is configured, otherwise the in-process bus (one-machine mode). */
export async function createBus(natsUrl: string | undefined, opts: { name?: string; onHandlerError?: (err: unknown, subject: string) => void; subjectPrefix?: string } = {}): Promise<Bus> {
  return natsUrl ? NatsBus.connect(natsUrl, opts) : new InProcessBus(opts);
}
