import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundGuard } from '../../src/net/outbound-guard.js';
import { OutboundRequestError, guardedPost } from '../../src/net/guarded-post.js';

const DEADLINE_MS = 300;
const LOOPBACK_ALLOWED = new OutboundGuard({ allow: ['127.0.0.1/32'] });

type Received = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string };

/** One loopback server whose behaviour is picked by path. */
const received: Received[] = [];
const sockets = new Set<net.Socket>();
let connectionCount = 0;
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    switch (req.url) {
      case '/ok':
        res.writeHead(204).end();
        break;
      case '/echo':
        res.writeHead(200, { 'content-type': 'text/plain' }).end('accepted évt');
        break;
      case '/error':
        res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded');
        break;
      case '/redirect':
        res.writeHead(302, { location: '/ok' }).end('moved');
        break;
      case '/big':
        res.writeHead(200).end('é'.repeat(3000)); // 6000 bytes, 2 bytes per character
        break;
      case '/slow':
        setTimeout(() => res.writeHead(200).end('late'), DEADLINE_MS + 400).unref();
        break;
      case '/hang-mid-body':
        res.writeHead(200, { 'content-length': '100' });
        res.write('only ten b');
        break; // never ends
      default:
        res.writeHead(404).end();
    }
  });
});
let port = 0;
let base = '';

function failure(promise: Promise<unknown>): Promise<OutboundRequestError> {
  return promise.then(
    () => {
      throw new Error('expected guardedPost to reject');
    },
    (err: unknown) => {
      expect(err).toBeInstanceOf(OutboundRequestError);
      return err as OutboundRequestError;
    },
  );
}

function post(url: string, guard = LOOPBACK_ALLOWED, extra: { timeoutMs?: number; signal?: AbortSignal } = {}) {
  return guardedPost(url, { guard, headers: { 'content-type': 'application/json', 'x-webhook-delivery-id': 'evt_1' }, body: '{"n":"é"}', timeoutMs: extra.timeoutMs ?? DEADLINE_MS, signal: extra.signal });
}

beforeAll(async () => {
  server.on('connection', (s) => {
    connectionCount += 1;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
});

describe('guardedPost', () => {
  it('refuses a loopback target when nothing is allowlisted, without connecting', async () => {
    const before = received.length;
    const err = await failure(post(`${base}/ok`, new OutboundGuard()));
    expect(err.kind).toBe('blocked');
    expect(err.message).toBe('127.0.0.1 is a loopback address');
    expect(err.message).not.toContain('\n');
    expect(received.length).toBe(before);
  });

  it('POSTs body and headers to an allowlisted loopback server and returns status and body snippet', async () => {
    const result = await post(`${base}/echo`);
    expect(result).toMatchObject({ status: 200, bodySnippet: 'accepted évt' });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    const seen = received.at(-1)!;
    expect(seen).toMatchObject({ method: 'POST', url: '/echo', body: '{"n":"é"}' });
    expect(seen.headers).toMatchObject({ 'content-type': 'application/json', 'x-webhook-delivery-id': 'evt_1', 'content-length': '10' });
  });

  it('connects to the address the guard resolved, for a name real DNS does not know', async () => {
    const guard = new OutboundGuard({ allow: ['127.0.0.1/32'], lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
    const result = await post(`http://hooks.guard-test.invalid:${port}/ok`, guard);
    expect(result.status).toBe(204);
    expect(received.at(-1)!.headers.host).toBe(`hooks.guard-test.invalid:${port}`);
  });

  it('blocks at connect time a host name whose lookup returns a private address', async () => {
    const guard = new OutboundGuard({ lookup: async () => [{ address: '10.0.0.1', family: 4 }] });
    const err = await failure(post(`http://hooks.guard-test.invalid:${port}/ok`, guard));
    expect(err.kind).toBe('blocked');
    expect(err.message).toBe('hooks.guard-test.invalid resolves to 10.0.0.1, a private address');
  });

  it('judges the answer DNS gives at connect time, not the one an earlier check saw (rebinding)', async () => {
    let calls = 0;
    const answers = ['93.184.216.34', '10.0.0.1'];
    const guard = new OutboundGuard({ lookup: async () => [{ address: answers[Math.min(calls++, 1)]!, family: 4 }] });
    await expect(guard.check(`http://rebind.guard-test.invalid:${port}/`)).resolves.toHaveLength(1);
    const err = await failure(post(`http://rebind.guard-test.invalid:${port}/ok`, guard));
    expect(err.kind).toBe('blocked');
    expect(calls).toBe(2);
  });

  it('reports a host that does not resolve as kind dns', async () => {
    const guard = new OutboundGuard({
      lookup: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      },
    });
    const err = await failure(post(`http://nowhere.guard-test.invalid:${port}/ok`, guard));
    expect(err.kind).toBe('dns');
    expect(err.message).toContain('ENOTFOUND');
  });

  it('returns a 500 as a result, not an error', async () => {
    await expect(post(`${base}/error`)).resolves.toMatchObject({ status: 500, bodySnippet: 'upstream exploded' });
  });

  it('does not follow a redirect', async () => {
    const before = received.length;
    await expect(post(`${base}/redirect`)).resolves.toMatchObject({ status: 302, bodySnippet: 'moved' });
    expect(received.slice(before).map((r) => r.url)).toEqual(['/redirect']);
  });

  it('keeps only the first KiB of a large body, without splitting a character', async () => {
    const result = await post(`${base}/big`);
    expect(result.status).toBe(200);
    expect(result.bodySnippet).toBe('é'.repeat(512));
    expect(Buffer.byteLength(result.bodySnippet)).toBe(1024);
  });

  it('times out a server that answers after the deadline, with latency about the deadline', async () => {
    const err = await failure(post(`${base}/slow`));
    expect(err.kind).toBe('timeout');
    expect(err.latencyMs).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    expect(err.latencyMs).toBeLessThan(DEADLINE_MS + 150);
  });

  it('times out a server that stops in the middle of the body', async () => {
    const err = await failure(post(`${base}/hang-mid-body`));
    expect(err.kind).toBe('timeout');
    expect(err.latencyMs).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
  });

  it('reports a refused connection as kind connect', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const err = await failure(post(`http://127.0.0.1:${deadPort}/ok`));
    expect(err.kind).toBe('connect');
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('reports a failed TLS handshake as kind tls', async () => {
    // An https URL pointed at the plain-HTTP server: TCP connects, the handshake cannot.
    const err = await failure(post(`https://127.0.0.1:${port}/ok`));
    expect(err.kind).toBe('tls');
  });

  it('reports a peer that does not speak HTTP as kind protocol', async () => {
    // resume(): a socket nobody reads never sees the client's FIN, and close() would wait for it.
    const garbage = net.createServer((s) => s.resume().end('SSH-2.0-OpenSSH_9.6\r\n\r\n'));
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    try {
      const err = await failure(post(`http://127.0.0.1:${(garbage.address() as AddressInfo).port}/`));
      expect(err.kind).toBe('protocol');
    } finally {
      await new Promise((resolve) => garbage.close(resolve));
    }
  });

  it('rejects with kind timeout when the caller aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const err = await failure(post(`${base}/slow`, LOOPBACK_ALLOWED, { timeoutMs: 5_000, signal: controller.signal }));
    expect(err.kind).toBe('timeout');
    expect(err.latencyMs).toBeLessThan(1_000);
  });

  it('reuses a kept-alive connection for the next request to the same origin', async () => {
    const guard = new OutboundGuard({ allow: ['127.0.0.1/32'] });
    await post(`${base}/ok`, guard);
    const connectionsBefore = connectionCount;
    await post(`${base}/ok`, guard);
    await post(`${base}/ok`, guard);
    expect(connectionCount).toBe(connectionsBefore);
  });
});
