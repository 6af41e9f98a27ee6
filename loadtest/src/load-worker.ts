/**
 * Entry of the load process forked by {@link runLoad}: receives one {@link LoadSpec},
 * runs autocannon (one instance per phase), reports a {@link LoadMessage} and exits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { phasePlan } from './load-generator.js';
import type { LoadMessage, LoadSpec, RequestSpec } from './load-generator.js';
import { mergeResults, summariseLatencies } from './report.js';
import type { LoadResult } from './report.js';

/** autocannon's client as far as we read it: the request just answered (pipelining 1, so the one in flight). */
interface ClientView {
  requestIterator?: { currentRequest?: autocannon.Request };
}

interface Counters {
  paths: number[];
  names: { n: number };
  /** Connections started so far over every phase: the next one starts the sequence at this position (mod its length). */
  connections: number;
}

/**
 * autocannon requests for one instance. Counters live in the process, shared by every
 * connection and phase: one per position for rotating paths, one for unique names.
 */
function requestsOf(requests: RequestSpec[], counters: Counters): autocannon.Request[] {
  return requests.map((r, i) => {
    const headers = { ...(r.body ? { 'content-type': 'application/json' } : {}), ...r.headers };
    const base: autocannon.Request = { method: r.method, path: r.paths[0]!, headers, ...(r.body ? { body: JSON.stringify(r.body) } : {}) };
    if (r.paths.length === 1 && r.uniqueNamePrefix === undefined) return base;
    const { body, paths, uniqueNamePrefix: prefix } = r;
    return {
      ...base,
      setupRequest: (req) => {
        const k = counters.paths[i]!++;
        const named = body && prefix !== undefined ? { body: JSON.stringify({ ...body, name: `${prefix} ${++counters.names.n}` }) } : {};
        return { ...req, path: paths[k % paths.length]!, ...named };
      },
    };
  });
}

type OnLatency = (index: number, ms: number) => void;

/**
 * One autocannon instance. Connection i starts the sequence at position i mod its length
 * (through `setupClient`, before its first request): all starting at the first request
 * would skew the mix toward the sequence's head whenever connections finish only part of
 * a cycle (short runs, or a server that cannot keep up).
 */
function runInstance(spec: LoadSpec, durationSec: number, requests: autocannon.Request[], connections: number, overallRate: number | undefined, counters: Counters, onLatency: OnLatency): Promise<LoadResult> {
  const indexOf = new Map(requests.map((r, i) => [r, i]));
  const setupClient = (client: autocannon.Client) => {
    const k = counters.connections++ % requests.length;
    // Also at k = 0: autocannon hands clients copies of `requests`, and the per-request
    // latencies find the request answered by identity among these objects.
    client.setRequests([...requests.slice(k), ...requests.slice(0, k)]);
  };
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: spec.origin, duration: durationSec, connections, timeout: 10, requests, setupClient, ...(overallRate !== undefined ? { overallRate } : {}) },
      (err: unknown, result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result)),
    );
    // Same rule as autocannon's histogram: only 2xx latencies count.
    instance.on('response', (client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode < 200 || statusCode >= 300) return;
      const current = (client as unknown as ClientView).requestIterator?.currentRequest;
      onLatency(current ? (indexOf.get(current) ?? -1) : -1, responseTimeMs);
    });
  });
}

/** The phases of `spec` (see {@link phasePlan}) side by side for `durationSec`; `onLatency` hears every 2xx answer. */
async function runPhases(spec: LoadSpec, durationSec: number, counters: Counters, onLatency: OnLatency): Promise<LoadResult[]> {
  return Promise.all(
    phasePlan(spec).map(async (phase) => {
      if (phase.startMs > 0) await sleep(phase.startMs);
      return runInstance(spec, durationSec, requestsOf(spec.requests, counters), phase.connections, phase.overallRate, counters, onLatency);
    }),
  );
}

async function run(spec: LoadSpec): Promise<LoadMessage> {
  try {
    // Counters run on from the warm-up, so its unique names are never reused.
    const counters: Counters = { paths: spec.requests.map(() => 0), names: { n: 0 }, connections: 0 };
    if (spec.warmupSec) await runPhases(spec, spec.warmupSec, counters, () => undefined);
    const labels = [...new Set(spec.requests.map((r) => r.label))];
    const all: number[] = [];
    const perLabel = new Map<string, number[]>(labels.map((l) => [l, []]));
    const onLatency = (index: number, ms: number) => {
      all.push(ms);
      const label = spec.requests[index]?.label;
      if (label !== undefined) perLabel.get(label)!.push(ms);
    };
    // The parent counts its servers' CPU from here.
    process.send!({ kind: 'measuring' } satisfies LoadMessage);
    const results = await runPhases(spec, spec.durationSec, counters, onLatency);
    return {
      kind: 'done',
      outcome: {
        result: mergeResults(results),
        latency: summariseLatencies(all),
        byLabel: labels.map((label) => ({ label, latency: summariseLatencies(perLabel.get(label)!) })),
      },
    };
  } catch (err) {
    return { kind: 'failed', message: err instanceof Error ? err.message : String(err) };
  }
}

process.once('message', (spec: LoadSpec) => {
  void run(spec).then((message) => process.send!(message, () => process.disconnect()));
});
