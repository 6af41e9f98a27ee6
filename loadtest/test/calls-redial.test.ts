import { describe, expect, it } from 'vitest';
import { StreamRefusedError } from '@vap/media-gateway/simulators';
import { MAX_RETRY_AFTER_MS, REDIAL_AFTER_FAILURE_MS, redialAfterMs } from '../src/calls/redial.js';

describe('bench:calls redial wait after a failed dial', () => {
  it('waits the Retry-After of a refusal (503), capped, and never less than the pause after any failure', () => {
    expect(redialAfterMs(new StreamRefusedError(503, 5))).toBe(5000);
    expect(redialAfterMs(new StreamRefusedError(503, 120))).toBe(MAX_RETRY_AFTER_MS);
    expect(redialAfterMs(new StreamRefusedError(503, 0))).toBe(REDIAL_AFTER_FAILURE_MS);
    expect(redialAfterMs(new StreamRefusedError(503, null))).toBe(REDIAL_AFTER_FAILURE_MS);
  });

  it('pauses the same short while after any other failure, whatever it says', () => {
    expect(redialAfterMs(new StreamRefusedError(404, 60))).toBe(REDIAL_AFTER_FAILURE_MS);
    expect(redialAfterMs(new Error('connect ECONNREFUSED'))).toBe(REDIAL_AFTER_FAILURE_MS);
  });
});
