/**
 * One `upgrade` listener per HTTP server, dispatching WebSocket upgrades by path to the
 * carrier endpoints attached to it (Twilio, Telnyx and Vonage media streams each own one
 * path). Fastify does not handle upgrades, so the gateway's server gets exactly one of
 * these; an upgrade to a path nobody claimed is answered 404 and closed.
 */
import { STATUS_CODES } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** Handles an upgrade request whose path it claimed; owns `socket` from then on. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/**
 * Answers an upgrade with an HTTP status (there is no response object) and closes the socket;
 * with `problem`, an RFC 7807 body says why (a carrier ignores it; a person with curl, or a
 * test caller, reads it).
 */
export function refuseUpgrade(socket: Duplex, status: number, headers: Record<string, string> = {}, problem?: Record<string, unknown>): void {
  const body = problem === undefined ? '' : JSON.stringify({ type: 'about:blank', status, ...problem });
  const all = { ...headers, ...(problem === undefined ? {} : { 'Content-Type': 'application/problem+json' }), 'Content-Length': String(Buffer.byteLength(body)) };
  const lines = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\n${lines}\r\n${body}`, () => socket.destroy());
}

/** Routes a server's WebSocket upgrades by exact path (the query string is ignored). */
export class UpgradeRouter {
  private readonly routes = new Map<string, UpgradeHandler>();
  private readonly listener = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const handler = this.routes.get(path);
    if (!handler) {
      socket.on('error', () => {});
      refuseUpgrade(socket, 404);
      return;
    }
    handler(req, socket, head);
  };

  constructor(private readonly server: Server) {
    server.on('upgrade', this.listener);
  }

  /** Claims `path`; the returned function gives it up (later upgrades to it get 404). */
  add(path: string, handler: UpgradeHandler): () => void {
    if (this.routes.has(path)) throw new Error(`upgrade path ${path} is already claimed`);
    this.routes.set(path, handler);
    return () => {
      if (this.routes.get(path) === handler) this.routes.delete(path);
    };
  }

  /** Stops listening for upgrades on the server. */
  close(): void {
    this.server.off('upgrade', this.listener);
    this.routes.clear();
  }
}
