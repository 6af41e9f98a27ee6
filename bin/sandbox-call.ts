/**
 * `pnpm call`: places one phone call to a running platform (`pnpm start` in another
 * terminal) the way Twilio (or Telnyx, or Vonage) would: a signed voice webhook, then a real media stream with a
 * simulated caller speaking a short restaurant booking. When the providers are the
 * sandbox simulators, the STT and LLM are scripted for this call. Prints the transcript,
 * the latency of each turn (at the caller and broken down by the gateway), the barge-in
 * reaction and the stored conversation.
 *
 *   pnpm call [--carrier twilio|telnyx|vonage] [--to <E.164>] [--from <E.164>] [--api-key <key>]
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '@vap/control-plane';
import type { ControlPlaneConfig } from '@vap/control-plane';
import { loadGatewayConfig } from '@vap/media-gateway';
import type { GatewayConfig } from '@vap/media-gateway';
import { runCallerScript } from '@vap/media-gateway/simulators';
import type { CallerStep, CallerTurnTiming } from '@vap/media-gateway/simulators';
import { callerSpeechMulawWithSource } from '@vap/voice-pipeline';
import type { CallerSpeechSource } from '@vap/voice-pipeline';
import { SANDBOX_PHONE_NUMBER } from '../control-plane/src/modules/telephony/sandbox-receptionist.js';
import { agentMemory, agentSegments, bargeInLines, callerViewTranscript, latencyTable, storedTranscript } from './sandbox-call/call-report.js';
import { finalGatewaySummary, llmRequestBodies, llmRequestCount, storedRecord } from './sandbox-call/call-outcome.js';
import { BOOKING_CONVERSATION, callerSteps, llmReplies, speechOnly, sttScript } from './sandbox-call/conversation-script.js';
import type { ScriptedTurn } from './sandbox-call/conversation-script.js';
import { CARRIERS, carrierName, carrierSigning, dialCarrier, isCarrier, newCallSid, numberNeeded } from './sandbox-call/carrier-dial.js';
import type { Carrier } from './sandbox-call/carrier-dial.js';
import { SandboxCallError, checkControlPlane, describeProviders, findGateway, http, platformTargets } from './sandbox-call/platform-targets.js';

/** The caller's number unless `--from` is given: a US number in the 555-01xx fictional range. */
export const DEFAULT_FROM = '+14155550100';

/** What {@link runSandboxCall} needs: the platform's configuration and where to print. */
export interface SandboxCallOptions {
  config: ControlPlaneConfig;
  gatewayConfig: GatewayConfig;
  /** Who places the call; default twilio. Telnyx and Vonage need `to` (a number of theirs). */
  carrier?: Carrier;
  to?: string;
  from?: string;
  /** A tenant API key (conversations:read): the transcript then comes from the platform's stored messages. */
  apiKey?: string;
  out: (line: string) => void;
  /** The conversation; default {@link BOOKING_CONVERSATION} (a test plays a shorter one). */
  turns?: readonly ScriptedTurn[];
  /** Caller speech; default espeak-ng when installed, else the committed recordings. */
  speech?: (text: string) => Promise<{ mulaw: Uint8Array; source: CallerSpeechSource }>;
}

/** What the call produced, for callers that check it (the test). */
export interface SandboxCallResult {
  callSid: string;
  conversationId: string | null;
  status: string | null;
  endReason: string | null;
  timings: CallerTurnTiming[];
}

const SPEECH_SOURCES: Record<CallerSpeechSource, string> = {
  'espeak-ng': 'espeak-ng (synthesised on this machine)',
  fixture: 'recorded fixtures from voice-pipeline/fixtures/speech (espeak-ng is not installed)',
  tone: 'tone bursts (no espeak-ng and no recording of a line: a live STT will not understand them)',
};

const E164 = /^\+[1-9]\d{6,14}$/;

/**
 * Runs one sandbox call against a running platform. Throws {@link SandboxCallError} with
 * a message meant for the user when the platform is not running, the number is unknown,
 * the token does not match or the call does not go as scripted.
 */
export async function runSandboxCall(opts: SandboxCallOptions): Promise<SandboxCallResult> {
  const out = opts.out;
  const carrier = opts.carrier ?? 'twilio';
  if (carrier !== 'twilio' && !opts.to) throw numberNeeded(carrier);
  const to = opts.to ?? SANDBOX_PHONE_NUMBER;
  const from = opts.from ?? DEFAULT_FROM;
  for (const [flag, n] of [['--to', to], ['--from', from]] as const) {
    if (!E164.test(n)) throw new SandboxCallError(`${flag} ${n} is not an E.164 number (like +15005550006).`);
  }
  const apiKey = opts.apiKey ?? opts.config.bootstrap.apiKey;
  const targets = platformTargets(opts.config, opts.gatewayConfig);
  await checkControlPlane(targets);
  const gateway = await findGateway(targets);
  const signing = carrierSigning(carrier, opts.config);
  const { deepgram, openai } = gateway.providers;
  const turns = opts.turns ?? BOOKING_CONVERSATION;
  const callSid = newCallSid(carrier);

  out(`Sandbox call to ${to} from ${from} over ${carrierName(carrier)}`);
  out(`  Platform       ${targets.controlPlaneUrl}; voice webhook signed with ${signing.source}`);
  out(`  Media gateway  ${gateway.url}`);
  for (const line of describeProviders(gateway.providers)) out(`  Provider       ${line}`);
  if (deepgram.simulated) {
    const res = await http('POST', `${deepgram.baseUrl}/__sim/script`, { body: sttScript(callSid, turns) });
    if (!res.ok || res.status >= 300) throw new SandboxCallError(`Could not script the Deepgram simulator at ${deepgram.baseUrl} (${res.ok ? `HTTP ${res.status}` : res.error}).`);
  }
  let llmLogFrom = 0;
  if (openai.simulated) {
    llmLogFrom = await llmRequestCount(openai.baseUrl);
    const res = await http('POST', `${openai.baseUrl}/__sim/replies`, { body: llmReplies(turns) });
    if (!res.ok || res.status >= 300) throw new SandboxCallError(`Could not script the OpenAI simulator at ${openai.baseUrl} (${res.ok ? `HTTP ${res.status}` : res.error}).`);
  }
  if (!deepgram.simulated && !openai.simulated) out('  Scripting      none: STT and LLM are live, so the call runs unscripted (the real STT hears the caller, the real LLM answers)');
  else out(`  Scripting      ${[deepgram.simulated && 'STT simulator told the caller\'s lines for this call id', openai.simulated && 'LLM simulator told its replies'].filter(Boolean).join('; ')}${deepgram.simulated && openai.simulated ? '' : ' (the other one is live)'}`);

  // Render every line before dialling, so synthesis never delays the caller mid-call.
  const speak = opts.speech ?? ((text: string) => callerSpeechMulawWithSource(text));
  const clips = new Map<string, Uint8Array>();
  const sources = new Set<CallerSpeechSource>();
  for (const t of turns) {
    const { mulaw, source } = await speak(t.say);
    clips.set(t.say, speechOnly(mulaw));
    sources.add(source);
  }
  out(`  Caller speech  ${[...sources].map((s) => SPEECH_SOURCES[s]).join(' + ')}`);
  out(`  Call id        ${callSid} (${carrier === 'twilio' ? 'CallSid' : carrier === 'telnyx' ? 'call_control_id' : 'uuid'})`);
  out('');

  const call = await dialCarrier(signing, { controlPlaneUrl: targets.controlPlaneUrl, from, to, callSid });
  const t0 = performance.now();
  const stamp = () => `${((performance.now() - t0) / 1000).toFixed(1).padStart(5)} s`;
  const steps: CallerStep[] = callerSteps(turns, openai.simulated);
  let lineClosed = false;
  void call.closed.then(() => (lineClosed = true));
  let timings: CallerTurnTiming[];
  try {
    timings = await runCallerScript(call, steps, {
      speech: async (text) => clips.get(text) ?? speechOnly((await speak(text)).mulaw),
      onStep: (step) => {
        if ('say' in step) out(`${stamp()}  caller: ${step.say}`);
        else if ('sayOverAgent' in step) out(`${stamp()}  caller waits for the agent to talk, then cuts in after ${step.afterMs} ms: ${step.sayOverAgent}`);
        else if ('expectAgent' in step) out(`${stamp()}  waiting for the agent to answer`);
        else if ('expectHangup' in step) out(`${stamp()}  waiting for the agent to say goodbye and hang up`);
      },
    });
  } catch (err) {
    await call.hangup();
    const summary = await finalGatewaySummary(gateway.url, callSid, 3000);
    const gw = summary ? ` The gateway reports: status ${summary.status}, end reason ${summary.endReason ?? 'none'}.` : '';
    throw new SandboxCallError(`The call did not go as scripted: ${(err as Error).message}.${gw}`);
  }
  // With a live LLM nothing makes the agent say its end-call phrase: the caller ends the call.
  const agentHungUp = lineClosed || openai.simulated;
  if (!agentHungUp) await call.hangup();
  await call.closed;
  out(`${stamp()}  call ended (${agentHungUp ? 'the agent hung up' : 'the caller hung up'})`);
  out('');

  const summary = await finalGatewaySummary(gateway.url, callSid);
  const conversationId = summary?.conversationId ?? null;
  const stored = conversationId ? await storedRecord(targets, { conversationId, callSid }, apiKey) : { conversation: null, messages: null, notes: ['the gateway reported no conversation id'] };

  if (stored.messages) {
    out('Transcript (stored by the platform, read with the API key)');
    for (const line of storedTranscript(stored.messages)) out(line);
  } else {
    const memory = openai.simulated ? agentMemory(await llmRequestBodies(openai.baseUrl, llmLogFrom), turns.map((t) => t.say)) : null;
    out(`Transcript as the caller experienced it (${openai.simulated ? 'agent answers as scripted for the simulated LLM' : 'agent answers from the live LLM are not known here'}; pass --api-key for the stored one)`);
    for (const line of callerViewTranscript({ turns, segments: agentSegments(call.agentAudio, [...call.clears, ...timings.flatMap((t) => t.clearedAt ?? [])], timings), llmScripted: openai.simulated, memory })) out(line);
    if (memory) out('  (greeting and heard part of the cut answer: the agent\'s own memory of the call, from the simulated LLM\'s request log)');
  }
  out('');
  out('Latency per turn, ms: "caller" = end of caller speech → first agent audio heard, measured at the caller; the rest is the gateway\'s breakdown');
  for (const line of latencyTable(timings, summary)) out(line);
  for (const line of bargeInLines(timings, summary)) out(line);
  out('');

  const conv = stored.conversation;
  const status = summary?.status ?? null;
  const endReason = summary?.endReason ?? null;
  out(`Conversation   ${conversationId ?? '(none)'}`);
  out(`  Gateway      status ${status ?? 'unknown'}, end reason ${endReason ?? 'unknown'}`);
  if (conv) {
    const extras = [conv.endReason !== undefined && `end reason ${conv.endReason ?? 'none'}`, conv.durationSeconds !== null && `${conv.durationSeconds} s`, conv.costUsd !== null && `cost $${conv.costUsd.toFixed(4)}`];
    out(`  Stored       status ${conv.status}, ${extras.filter(Boolean).join(', ')} (${conv.source})`);
  }
  for (const note of stored.notes) out(`  Note         ${note}`);
  return { callSid, conversationId, status, endReason, timings };
}

const USAGE = 'Usage: pnpm call [--carrier twilio|telnyx|vonage] [--to <E.164>] [--from <E.164>] [--api-key <key>]';

/** Parses the command line and runs the call; returns the exit code (errors are printed, not thrown; 2 for a bad --carrier). */
export async function main(
  argv: string[],
  deps: { config?: ControlPlaneConfig; gatewayConfig?: GatewayConfig; out?: (line: string) => void; err?: (line: string) => void; turns?: readonly ScriptedTurn[] } = {},
): Promise<number> {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const errOut = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  try {
    // `pnpm call -- --carrier telnyx` (npm's habit, and how the bench commands are written) passes the `--` on.
    const args = argv[0] === '--' ? argv.slice(1) : argv;
    const { values } = parseArgs({ args, options: { carrier: { type: 'string' }, to: { type: 'string' }, from: { type: 'string' }, 'api-key': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true });
    if (values.help) {
      out(USAGE);
      out(`  Calls a running platform (pnpm start) like the carrier would (default twilio). --to defaults to the sandbox number ${SANDBOX_PHONE_NUMBER} (Twilio's);`);
      out('  with --carrier telnyx or vonage, --to must be a number of that carrier assigned to an agent.');
      out('  --api-key: a tenant API key with conversations:read; the transcript is then read from the platform (default BOOTSTRAP_API_KEY).');
      return 0;
    }
    const carrier = values.carrier ?? 'twilio';
    if (!isCarrier(carrier)) {
      errOut(`Error: --carrier must be one of ${CARRIERS.join(', ')} (got "${carrier}"). ${USAGE}`);
      return 2;
    }
    await runSandboxCall({
      carrier,
      config: deps.config ?? loadConfig(),
      gatewayConfig: deps.gatewayConfig ?? loadGatewayConfig(),
      to: values.to,
      from: values.from,
      apiKey: values['api-key'],
      turns: deps.turns,
      out,
    });
    return 0;
  } catch (err) {
    // loadGatewayConfig reports a bad environment as a plain Error starting with this.
    if (err instanceof SandboxCallError || err instanceof ConfigError || (err as Error).message?.startsWith('Invalid configuration')) errOut(`Error: ${(err as Error).message}`);
    else if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) errOut(`Error: ${(err as Error).message}. ${USAGE}`);
    else errOut(`Unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Exit at once: idle keep-alive sockets to the platform would otherwise hold the process a few seconds.
  process.exit(await main(process.argv.slice(2)));
}
