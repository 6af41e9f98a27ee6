/**
 * Entry of the provider-simulators process of `pnpm bench:calls`: Deepgram, OpenAI and
 * ElevenLabs simulators on loopback, in a process of their own so their work is neither
 * the gateway's nor the callers'. The LLM's replies are set here; each call's STT lines
 * come from the callers over the Deepgram simulator's control API.
 */
import { DeepgramSimulator, ElevenLabsSimulator, OpenAiSimulator } from '@vap/voice-pipeline/simulators';
import { LLM_REPLIES } from './call-script.js';
import type { SimsMessage, SimsStart, ToSims } from './ipc.js';
import { ProcessSampler } from './process-sampler.js';

/** How often the simulators' per-connection logs (kept for tests) are trimmed of finished connections, ms. */
const TRIM_INTERVAL_MS = 5000;

const send = (m: SimsMessage) => process.send!(m);

async function start(opts: SimsStart): Promise<void> {
  const deepgram = await DeepgramSimulator.start();
  const openai = await OpenAiSimulator.start();
  const elevenlabs = await ElevenLabsSimulator.start();
  if (opts.sttLatencyMs > 0) deepgram.setFaults({ firstResultDelayMs: opts.sttLatencyMs });
  for (const r of LLM_REPLIES) openai.addReply({ match: new RegExp(r.match.regex, r.match.flags), reply: r.reply });

  // A long run would otherwise keep every message of every call in memory.
  const trim = setInterval(() => {
    keepOnly(deepgram.connections, (c) => !c.closed);
    keepOnly(elevenlabs.connections, (c) => c.closeCode === null);
    keepOnly(elevenlabs.httpRequests, () => false);
    keepOnly(openai.requests, (r) => r.status === null || (!r.completed && !r.clientDisconnected));
  }, TRIM_INTERVAL_MS);
  trim.unref();

  const close = async () => {
    clearInterval(trim);
    await Promise.all([deepgram.close(), openai.close(), elevenlabs.close()]);
    process.exit(0);
  };
  // What the simulators cost is reported too: starved, they would slow every turn.
  const sampler = new ProcessSampler({ intervalMs: 60_000, activeCalls: () => 0, onSample: () => {} });
  process.on('message', (m: ToSims) => {
    if (m.kind !== 'usage') return;
    const s = sampler.sample();
    send({ kind: 'usage', at: s.at, cpuMs: s.cpuMs, loopDelayP99Ms: s.loopP99Ms });
  });
  process.once('SIGTERM', () => void close());
  process.once('disconnect', () => void close());
  send({
    kind: 'ready',
    deepgram: { url: deepgram.url, apiKey: deepgram.apiKey },
    openai: { url: openai.url, apiKey: openai.apiKey },
    elevenlabs: { url: elevenlabs.url, apiKey: elevenlabs.apiKey },
  });
}

function keepOnly<T>(list: T[], keep: (item: T) => boolean): void {
  let w = 0;
  for (const item of list) if (keep(item)) list[w++] = item;
  list.length = w;
}

process.once('message', (m: ToSims) => {
  if (m.kind !== 'start') return;
  start(m).catch((err: unknown) => {
    send({ kind: 'failed', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
});
