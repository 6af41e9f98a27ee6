import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SPARE_PORT_RANGE, spareLoopbackPort } from '../../src/net/spare-port.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      servers.push(s);
      resolve(s);
    });
  });
}

describe('spare loopback port', () => {
  it('picks a port below the ephemeral range that a server can then listen on', async () => {
    const port = await spareLoopbackPort();
    expect(port).toBeGreaterThanOrEqual(SPARE_PORT_RANGE[0]);
    expect(port).toBeLessThan(SPARE_PORT_RANGE[1]);
    // Outgoing connections take their local ports from this range (Linux): none of ours is in it.
    if (process.platform === 'linux') {
      const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
      expect(SPARE_PORT_RANGE[1]).toBeLessThanOrEqual(low!);
    }
    await listen(port);
  });

  it('skips a port something listens on, and says so when the whole range is taken', async () => {
    const port = await spareLoopbackPort();
    const held = await listen(port);
    await expect(spareLoopbackPort([port, port + 1])).rejects.toThrow(`no free port found in ${port}-${port + 1}`);
    await new Promise((r) => held.close(r));
    await expect(spareLoopbackPort([port, port + 1])).resolves.toBe(port);
  });
});
