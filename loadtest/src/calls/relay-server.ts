/**
 * The bare relay baseline of `pnpm bench:calls`: a `ws` server on the Twilio media-stream
 * path that speaks the same protocol as the gateway with no pipeline. On `start` it says
 * nothing; every inbound `media` goes straight back as an outbound `media` with the same
 * payload and streamSid; a `mark` is echoed; `stop` closes. No STT, LLM or TTS: what is
 * left is the cost of carrying the frames (sockets, JSON), against which the gateway's
 * CPU per call-second is compared.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';

/** The gateway's Twilio media-stream path (media-gateway/src/twilio/media-stream-server.ts, not exported): the relay listens on the same one. */
export const TWILIO_STREAM_PATH = '/api/v1/webhooks/twilio/media-stream';

export interface RelayServer {
  /** `ws://127.0.0.1:PORT` + {@link TWILIO_STREAM_PATH}. */
  streamUrl: string;
  /** Streams open now. */
  readonly activeCalls: number;
  /** Inbound messages the relay could not parse (it closes such a stream with 1007, as a strict peer would). */
  readonly badMessages: number;
  close(): Promise<void>;
}

interface InboundFields {
  event?: unknown;
  streamSid?: unknown;
  media?: { payload?: unknown };
  mark?: { name?: unknown };
}

/** Starts the relay on loopback (port 0 = any free port). */
export async function startRelayServer(port = 0): Promise<RelayServer> {
  const server = createServer((_req, res) => {
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, path: TWILIO_STREAM_PATH });
  let badMessages = 0;
  wss.on('connection', (ws: WebSocket) => {
    ws.on('error', () => {});
    ws.on('message', (data: RawData, isBinary: boolean) => {
      let msg: InboundFields;
      try {
        if (isBinary) throw new Error('binary');
        msg = JSON.parse(data.toString()) as InboundFields;
      } catch {
        badMessages++;
        ws.close(1007);
        return;
      }
      switch (msg.event) {
        case 'media':
          ws.send(JSON.stringify({ event: 'media', streamSid: msg.streamSid, media: { payload: msg.media?.payload } }));
          return;
        case 'mark':
          ws.send(JSON.stringify({ event: 'mark', streamSid: msg.streamSid, mark: { name: msg.mark?.name } }));
          return;
        case 'stop':
          ws.close(1000);
          return;
        default:
          // `connected`, `start`, `dtmf`: nothing to answer.
          return;
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    streamUrl: `ws://127.0.0.1:${bound}${TWILIO_STREAM_PATH}`,
    get activeCalls() {
      return wss.clients.size;
    },
    get badMessages() {
      return badMessages;
    },
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
