import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got: headers and the raw body, as a signature check needs them. */
export interface CapturedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP server standing in for a customer's webhook endpoint. */
export interface CaptureReceiver<D extends CapturedDelivery> {
  /** `http://127.0.0.1:<port><path>`, to register as the webhook URL. */
  url: string;
  /** Requests in the order their answers were sent. */
  received: D[];
  close(): Promise<void>;
}

/**
 * Starts a receiver that records every request and answers 204. `annotate` runs before the
 * answer (the sender waits for it) and returns what is recorded, so a test can observe the
 * platform at the moment a delivery arrives; if it throws, the receiver answers 500 and the
 * error surfaces as an unhandled rejection, failing the test run.
 */
export async function startCaptureReceiver<D extends CapturedDelivery = CapturedDelivery>(
  path: string,
  annotate: (d: CapturedDelivery) => D | Promise<D> = (d) => d as D,
): Promise<CaptureReceiver<D>> {
  const received: D[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void Promise.resolve({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
        .then(annotate)
        .then(
          (d) => {
            received.push(d);
            res.writeHead(204).end();
          },
          (err: unknown) => {
            res.writeHead(500).end();
            throw err;
          },
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
