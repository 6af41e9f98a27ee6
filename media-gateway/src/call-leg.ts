/**
 * One carrier leg of a call as the session sees it, whatever the carrier (Twilio media
 * stream now; Telnyx, Vonage, SIP and WebRTC later). Audio is G.711 μ-law 8 kHz in both
 * directions on phone legs; the leg does the carrier's framing, pacing and wire format.
 */
export interface CallLeg {
  readonly provider: 'twilio' | 'telnyx' | 'vonage' | 'sip' | 'webrtc';
  /** The carrier's call id (Twilio CallSid). */
  readonly callSid: string;
  /** Routing and call metadata the carrier handed over (Twilio `start.customParameters`). */
  readonly parameters: Readonly<Record<string, string>>;

  /** Caller audio, μ-law 8 kHz, as it arrives (normally 20 ms per call). */
  onAudio(listener: (mulaw: Uint8Array) => void): void;
  /** A key the caller pressed (`0-9`, `*`, `#`). */
  onDtmf(listener: (digit: string) => void): void;
  /**
   * Playback progress: `name` of a mark sent with {@link sendMark} whose audio has been
   * played to the caller. After {@link clear}, marks that were cut are not reported.
   */
  onMarkPlayed(listener: (name: string) => void): void;
  /**
   * Agent audio as it leaves for the carrier, one paced frame at a time (`frame` may be a
   * view: copy what you keep), `atMs` = `performance.now()` when it was sent. The carrier
   * plays a frame from max(`atMs`, end of the previous frame). Recording uses this: it is
   * what the caller was played, not what the session queued.
   */
  onAudioSent(listener: (frame: Uint8Array, atMs: number) => void): void;
  /** A {@link clear} reached the carrier at `atMs` (`performance.now()`): agent audio sent and not yet played was dropped there. */
  onCleared(listener: (atMs: number) => void): void;
  /** The leg is over: `hangup` (carrier said stop), `socket-lost`, or `local` (we hung up). Fires once. */
  onEnd(listener: (reason: 'hangup' | 'socket-lost' | 'local') => void): void;

  /** Queue agent audio (μ-law 8 kHz, any length); the leg sends it in paced 20 ms frames. */
  sendAudio(mulaw: Uint8Array): void;
  /** Queue a named mark after the audio queued so far. */
  sendMark(name: string): void;
  /** Barge-in: drop audio queued locally and at the carrier (Twilio `clear`), held audio included. */
  clear(): void;
  /**
   * Tentative barge-in: stop playback now (Twilio `clear`, reported by {@link onCleared}) and
   * hold the audio the carrier had not played yet, rewound to the first frame it had not
   * started (what was sent ahead and discarded is sent again), with the marks not yet
   * echoed. Audio and marks queued meanwhile wait behind it. Idempotent.
   */
  pause(): void;
  /** Send the held audio on, from where {@link pause} stopped (frames are reported by {@link onAudioSent} again). */
  resume(): void;
  /** Milliseconds of audio queued locally and not yet sent. */
  readonly queuedMs: number;
  /**
   * Agent audio is playing to the caller: queued here or sent and not yet reported played
   * (its mark not echoed), and not paused. What a barge-in would stop.
   */
  readonly agentPlaying: boolean;
  /** End the call from our side; resolves when the leg is closed. */
  hangup(): Promise<void>;
}
