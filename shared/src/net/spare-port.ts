/**
 * A port for a server a test or a benchmark starts for a while on loopback (an embedded
 * Postgres, say), chosen before the server binds it.
 */
import { createServer } from 'node:net';

/**
 * Below the ephemeral ranges outgoing connections take their local port from (Linux 32768–60999,
 * macOS and Windows 49152–65535): a port in one of those can be handed to any outgoing
 * connection between the probe and the server's bind. CI failed once so, with an embedded
 * Postgres on a random port at 51632 ("could not bind ... Address already in use").
 */
export const SPARE_PORT_RANGE: readonly [number, number] = [20_000, 32_000];

/** Whether something listens on `port` at 127.0.0.1 (an exclusive listen is refused). */
function taken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(true));
    probe.listen({ host: '127.0.0.1', port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/**
 * A random port in [min, max) that nothing listens on at 127.0.0.1 now. Random, so tests that
 * run side by side rarely pick the same one; a probe, so a listener already there is skipped.
 */
export async function spareLoopbackPort([min, max]: readonly [number, number] = SPARE_PORT_RANGE): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = min + Math.floor(Math.random() * (max - min));
    if (!(await taken(port))) return port;
  }
  throw new Error(`no free port found in ${min}-${max} after 20 tries`);
}
