/**
 * The gateway's HTTP answers to requests it cannot serve, as RFC 7807 problems like its
 * other refusals (a refused media stream, /readyz, /metrics): an unknown route, a request
 * Node's HTTP parser refuses, and the sandbox routes asked from another machine.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const PROBLEM = 'application/problem+json';

/** True for a peer on this machine (IPv4 127/8, IPv6 ::1, or IPv4 loopback mapped into IPv6). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** The gateway's problem documents carry no catalogue type: `about:blank`, titled by the status (RFC 7807 §4.2). */
function problem(status: number, detail: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'about:blank', title: STATUS_CODES[status], status, detail, ...extra };
}

/** Answers `reply` with a {@link problem}. */
export function sendGatewayProblem(reply: FastifyReply, status: number, detail: string, extra?: Record<string, unknown>): FastifyReply {
  return reply.code(status).type(PROBLEM).send(problem(status, detail, extra));
}

function notFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split('?')[0] ?? '';
  return sendGatewayProblem(reply, 404, `No route ${req.method} ${path.slice(0, 200)} on the media gateway.`);
}

/**
 * Unknown routes answer a 404 problem; `/sandbox/*` (simulator addresses and recent call
 * summaries, for `pnpm call` and the load tests, which run beside the platform) answers only
 * peers on this machine, anyone else the same 404, since the gateway's port is public to carriers.
 */
export function registerGatewayProblems(app: FastifyInstance): void {
  app.setNotFoundHandler(notFound);
  app.addHook('onRequest', async (req, reply) => {
    if (req.url.startsWith('/sandbox/') && !isLoopbackAddress(req.socket.remoteAddress)) return notFound(req, reply);
  });
}

/** Fastify's `clientErrorHandler`: a problem instead of Fastify's own JSON, then the socket is closed (as Node does). */
export function gatewayClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] =
    err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'The request line and headers exceed 16 KiB.'] : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'The request did not arrive in full in time.'] : [400, 'The request is not valid HTTP.'];
  const body = JSON.stringify(problem(status, detail));
  if (socket.writable) socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: ${PROBLEM}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  socket.destroy(err);
}
