import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpFetch } from '../../src/providers/openai/http-fetch.js';

/** A self-signed certificate for 127.0.0.1 (valid until 2126), made for the TLS test below with `openssl req -x509 -newkey ec`. */
const SELF_SIGNED = {
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJXMxHa5vgG417frr
XDd+W3FjmKTeNvR5Vo6lFsk2tyuhRANCAATeHRvjWWMgDkmsFUhMTRrBVvd6Mp7D
wbn+QxdQ+PVokFa/wrLJIiYYssI/z6s/ePjoyvbM5D0LPoAeYk2F+RIr
-----END PRIVATE KEY-----`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBkDCCATagAwIBAgIUA6dTfVOpnhIhOMqbgG/l2MUopK4wCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTIwNjA4MDY1MVoYDzIxMjYxMTEy
MDgwNjUxWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATeHRvjWWMgDkmsFUhMTRrBVvd6Mp7Dwbn+QxdQ+PVokFa/wrLJIiYY
ssI/z6s/ePjoyvbM5D0LPoAeYk2F+RIro2QwYjAdBgNVHQ4EFgQUfBGxCB5rKTX/
oEGIIVSr3D7hhTQwHwYDVR0jBBgwFoAUfBGxCB5rKTX/oEGIIVSr3D7hhTQwDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUC
IQDQ0T5Dy+ZoXXqEwoXmYZSJ4hbkYBAaQtABrEAFCUeD0QIgRraMWq3NCQ7tegTu
VIunuxua2+BAcJoZ2PHzEQKHKno=
-----END CERTIFICATE-----`,
};

/** A loopback HTTP server whose answer each test sets; it counts TCP connections and keeps each request. */
let server: Server;
let base: string;
let connections: number;
let requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
let handler: (req: IncomingMessage, res: ServerResponse) => void;
let closedResponses: number;

beforeEach(async () => {
  connections = 0;
  closedResponses = 0;
  requests = [];
  handler = (_req, res) => res.end('ok');
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      res.on('close', () => {
        if (!res.writableFinished) closedResponses++;
      });
      handler(req, res);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function readAll(body: unknown): Promise<string> {
  let text = '';
  for await (const part of body as AsyncIterable<Buffer>) text += part.toString('utf8');
  return text;
}

describe('httpFetch (the openai SDK transport)', () => {
  it('sends method, headers and body, and answers status, headers and a body the SDK can iterate', async () => {
    handler = (_req, res) => {
      res.writeHead(201, 'Created', [
        ['content-type', 'application/json'],
        ['x-request-id', 'req_1'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ]);
      res.end('{"id":"x"}');
    };
    const res = await httpFetch(`${base}/v1/chat/completions?x=1`, { method: 'POST', headers: new Headers({ Authorization: 'Bearer k', 'Content-Type': 'application/json' }), body: '{"a":"é"}' });
    expect(requests).toEqual([{ method: 'POST', url: '/v1/chat/completions?x=1', headers: expect.objectContaining({ authorization: 'Bearer k', 'content-type': 'application/json', 'content-length': '10' }), body: '{"a":"é"}' }]);
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.statusText).toBe('Created');
    expect(res.url).toBe(`${base}/v1/chat/completions?x=1`);
    expect(res.headers.get('x-request-id')).toBe('req_1');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    // The SDK iterates any async-iterable body as it is (ReadableStreamToAsyncIterable).
    expect(Symbol.asyncIterator in (res.body as object)).toBe(true);
    expect(await readAll(res.body)).toBe('{"id":"x"}');
  });

  it('reads an error answer with text() and json(), not ok', async () => {
    handler = (_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' });
      res.end('{"error":{"message":"slow down"}}');
    };
    const first = await httpFetch(`${base}/v1/x`);
    expect(first.ok).toBe(false);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(await first.json()).toEqual({ error: { message: 'slow down' } });
    const second = await httpFetch(`${base}/v1/x`);
    expect(await second.text()).toBe('{"error":{"message":"slow down"}}');
  });

  it('reuses one keep-alive connection for requests in sequence', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await httpFetch(`${base}/v1/x`, { method: 'POST', body: `{"i":${i}}` });
      expect(await res.text()).toBe('ok');
    }
    expect(requests.map((r) => r.body)).toEqual(['{"i":0}', '{"i":1}', '{"i":2}', '{"i":3}', '{"i":4}']);
    expect(connections).toBe(1);
  });

  it('decompresses a gzip answer', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' });
      res.end(gzipSync('data: hello\n\n'));
    };
    const res = await httpFetch(`${base}/v1/x`);
    expect(await readAll(res.body)).toBe('data: hello\n\n');
    // Nothing asked for compression: the answer came compressed only because this server chose to.
    expect(requests[0]!.headers['accept-encoding']).toBeUndefined();
  });

  it('rejects at once with an AbortError when the signal is already aborted, sending nothing', async () => {
    await expect(httpFetch(`${base}/v1/x`, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(connections).toBe(0);
  });

  it('rejects with an AbortError when aborted before the answer', async () => {
    handler = () => {
      // Never answers.
    };
    const controller = new AbortController();
    const pending = httpFetch(`${base}/v1/x`, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('ends a streamed body on abort and the server sees the client go away', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      // The rest never comes: the client must cut it off.
    };
    const controller = new AbortController();
    const res = await httpFetch(`${base}/v1/x`, { signal: controller.signal });
    const reading = (async () => {
      const seen: string[] = [];
      for await (const part of res.body as unknown as AsyncIterable<Buffer>) {
        seen.push(part.toString('utf8'));
        controller.abort();
      }
      return seen;
    })();
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(() => closedResponses).toBe(1);
  });

  it('rejects when nothing listens, as a connection error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(httpFetch(`http://127.0.0.1:${port}/v1/x`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it("speaks TLS to an https URL and verifies the server's certificate: a self-signed one is refused", async () => {
    const tls = createTlsServer(SELF_SIGNED, (_req, res) => res.end('secret'));
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    try {
      const port = (tls.address() as AddressInfo).port;
      // node:https's own error (Node's fetch would reject with "fetch failed" and this as its cause).
      await expect(httpFetch(`https://127.0.0.1:${port}/v1/x`)).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    } finally {
      tls.closeAllConnections();
      await new Promise<void>((resolve) => tls.close(() => resolve()));
    }
  });

  it("leaves what it does not carry to Node's fetch: a Request, a stream body", async () => {
    const viaRequest = await httpFetch(new Request(`${base}/v1/x`));
    expect(viaRequest).toBeInstanceOf(Response);
    expect(await viaRequest.text()).toBe('ok');
    const viaStream = await httpFetch(`${base}/v1/x`, { method: 'POST', body: Readable.toWeb(Readable.from(['a', 'b'])) as ReadableStream, duplex: 'half' } as RequestInit);
    expect(viaStream).toBeInstanceOf(Response);
    expect(requests.map((r) => r.body)).toEqual(['', 'ab']);
  });
});
