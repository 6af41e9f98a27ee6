import type { AgentConfig, ObjectStore, Payload } from '@vap/shared';
import { RECORDING_CONTENT_TYPES, RECORDING_SAMPLE_RATE_HZ } from './encode-recording.js';
import { CallRecorder } from './call-recorder.js';
import type { EncoderPool } from './encoder-pool.js';

/** The stored recording as `sessionEnded.recording` carries it. */
export type CallRecording = NonNullable<Payload<'sessionEnded'>['recording']>;

/** A recording may run this much past the agent's maximum duration: the goodbye said when time is up. */
const GOODBYE_ALLOWANCE_MS = 60_000;

/**
 * Records calls of agents with `recording.enabled` and, once a call is over, encodes the
 * recording off the event loop ({@link EncoderPool}) and puts it into the recording store
 * under `<tenantId>/<conversationId>.<mp3|wav>`.
 */
export class RecordingArchiver {
  constructor(private readonly deps: { store: ObjectStore; encoders: EncoderPool }) {}

  /** A recorder for a call starting now (`originMs`: `performance.now()` at t=0), or null when the agent does not record. */
  recorderFor(agent: Pick<AgentConfig, 'recording' | 'maxDurationSeconds'>, originMs: number): CallRecorder | null {
    if (!agent.recording.enabled) return null;
    return new CallRecorder({ originMs, maxDurationMs: agent.maxDurationSeconds * 1000 + GOODBYE_ALLOWANCE_MS });
  }

  /**
   * Ends the recording at the call's duration, encodes and stores it. Resolves with what
   * `sessionEnded` reports; rejects when encoding or storing fails (nothing is stored then).
   */
  async archive(recorder: CallRecorder, call: { tenantId: string; conversationId: string; durationMs: number; settings: AgentConfig['recording'] }): Promise<CallRecording> {
    const tracks = recorder.finish(call.durationMs);
    const { format, stereo, storageRetentionDays } = call.settings;
    const channels = stereo ? 2 : 1;
    const bytes = await this.deps.encoders.encode({ ...tracks, format, channels });
    const key = `${call.tenantId}/${call.conversationId}.${format}`;
    await this.deps.store.put(key, bytes, RECORDING_CONTENT_TYPES[format]);
    return {
      key,
      format,
      channels,
      durationSeconds: Math.round((tracks.lengthSamples / RECORDING_SAMPLE_RATE_HZ) * 100) / 100,
      sizeBytes: bytes.length,
      retentionDays: storageRetentionDays,
    };
  }
}
