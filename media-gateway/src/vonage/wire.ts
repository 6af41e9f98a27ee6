/**
 * Vonage WebSocket text messages (reference/telephony-vonage.md §3): parsing is pure, no I/O.
 * Audio travels in binary frames and never passes through here.
 */

/** The first message: `websocket:connected`, the content type, and our NCCO `headers` flattened to the top level. */
export interface VonageConnected {
  event: 'websocket:connected';
  contentType: string;
  /** Every other string-valued key: the NCCO `headers` (agentId, tenantId, callSid, from, to, direction, …). */
  headers: Record<string, string>;
}

/** A key press, one message per digit. */
export interface VonageDtmf {
  event: 'websocket:dtmf';
  digit: string;
  durationMs: number | undefined;
}

/** Any other event (`websocket:cleared`, `websocket:notify`, future ones): logged, never fatal. */
export interface VonageOtherEvent {
  event: 'other';
  name: string;
}

export type VonageInbound = VonageConnected | VonageDtmf | VonageOtherEvent;

/** Why a text frame was not understood. */
export type VonageRejectReason = 'invalid-json' | 'invalid-shape';

const DIGIT = /^[0-9*#A-Da-d]$/;

/**
 * Parses one text frame from Vonage; null (after calling `reject`) when it is not JSON or
 * not a message we can read. Header values that are not strings are ignored: our NCCO only
 * puts strings there.
 */
export function parseVonageMessage(text: string, reject: (reason: VonageRejectReason, detail: string) => void): VonageInbound | null {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    reject('invalid-json', text.slice(0, 80));
    return null;
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
    reject('invalid-shape', 'not an object');
    return null;
  }
  const m = msg as Record<string, unknown>;
  if (typeof m['event'] !== 'string') {
    reject('invalid-shape', 'no event');
    return null;
  }
  switch (m['event']) {
    case 'websocket:connected': {
      const contentType = m['content-type'];
      if (typeof contentType !== 'string') {
        reject('invalid-shape', 'websocket:connected without content-type');
        return null;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(m)) if (k !== 'event' && k !== 'content-type' && typeof v === 'string') headers[k] = v;
      return { event: 'websocket:connected', contentType, headers };
    }
    case 'websocket:dtmf': {
      const digit = m['digit'];
      if (typeof digit !== 'string' || !DIGIT.test(digit)) {
        reject('invalid-shape', 'websocket:dtmf without a digit');
        return null;
      }
      const duration = m['duration'];
      return { event: 'websocket:dtmf', digit: digit.toUpperCase(), durationMs: typeof duration === 'number' ? duration : undefined };
    }
    default:
      return { event: 'other', name: m['event'] };
  }
}

/** True for the one format the platform asks for in its NCCO: `audio/l16;rate=16000` (spaces and case ignored). */
export function isL16At16k(contentType: string): boolean {
  return contentType.replace(/\s+/g, '').toLowerCase() === 'audio/l16;rate=16000';
}

/** The simulator's side: the first text frame Vonage sends. */
export function connectedMessage(contentType: string, headers: Record<string, string>): string {
  return JSON.stringify({ event: 'websocket:connected', 'content-type': contentType, ...headers });
}

/** The simulator's side: a key press. */
export function dtmfMessage(digit: string, durationMs = 260): string {
  return JSON.stringify({ event: 'websocket:dtmf', digit, duration: durationMs });
}
