/**
 * Entry of the relay process of `pnpm bench:calls`: the bare relay baseline
 * (relay-server.ts), run and sampled by the same lifecycle as the gateway process
 * (server-lifecycle.ts) so their CPU per call-second compare fairly.
 */
import { startRelayServer } from './relay-server.js';
import { runBenchServer } from './server-lifecycle.js';

runBenchServer(async () => {
  const relay = await startRelayServer();
  return {
    ready: { streamUrl: relay.streamUrl, metricsUrl: null, agentId: 'relay', tenantId: 'relay', pipelineThreads: null, ttsWebSocket: null, admission: null, heapGrowth: null },
    activeCalls: () => relay.activeCalls,
    close: () => relay.close(),
  };
});
