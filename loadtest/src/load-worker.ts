/**
 * Entry of the load process forked by {@link runLoad}: receives one {@link LoadSpec},
 * runs autocannon, reports a {@link LoadMessage} and exits.
 */
import autocannon from 'autocannon';
import type { LoadMessage, LoadSpec } from './load-generator.js';
import { summariseLatencies } from './report.js';

function requestsOf(spec: LoadSpec): autocannon.Request[] {
  const headers = { ...(spec.body ? { 'content-type': 'application/json' } : {}), ...spec.headers };
  const base: autocannon.Request = { method: spec.method, path: spec.path, headers };
  if (!spec.body) return [base];
  const body = spec.body;
  const prefix = spec.uniqueNamePrefix;
  if (prefix === undefined) return [{ ...base, body: JSON.stringify(body) }];
  let n = 0;
  // Agent names are unique per tenant, so each create needs its own.
  return [{ ...base, setupRequest: (req) => ({ ...req, body: JSON.stringify({ ...body, name: `${prefix} ${++n}` }) }) }];
}

function run(spec: LoadSpec): Promise<LoadMessage> {
  return new Promise((resolve) => {
    const latenciesMs: number[] = [];
    const instance = autocannon(
      { url: spec.origin, duration: spec.durationSec, connections: spec.connections, timeout: 10, requests: requestsOf(spec) },
      (err: unknown, result) => {
        if (err) resolve({ kind: 'failed', message: err instanceof Error ? err.message : String(err) });
        else resolve({ kind: 'done', outcome: { result, latency: summariseLatencies(latenciesMs) } });
      },
    );
    // Same rule as autocannon's histogram: only 2xx latencies count.
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode >= 200 && statusCode < 300) latenciesMs.push(responseTimeMs);
    });
  });
}

process.once('message', (spec: LoadSpec) => {
  void run(spec).then((message) => process.send!(message, () => process.disconnect()));
});
