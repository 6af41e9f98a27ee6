import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/config.js';

describe('gateway recording configuration', () => {
  it('defaults to a local store under DATA_DIR and one encoder worker', () => {
    const c = loadGatewayConfig({});
    expect(c.dataDir).toBe('.data');
    expect(c.recordings).toEqual({ kind: 'local', directory: join('.data', 'recordings') });
    expect(c.recordingEncoderWorkers).toBe(1);
    expect(loadGatewayConfig({ DATA_DIR: '/var/lib/vap' }).recordings).toEqual({ kind: 'local', directory: join('/var/lib/vap', 'recordings') });
    expect(loadGatewayConfig({ RECORDINGS_DIR: '/srv/rec' }).recordings).toEqual({ kind: 'local', directory: '/srv/rec' });
  });

  it('reads the same S3 settings as the control plane', () => {
    const c = loadGatewayConfig({ RECORDINGS_STORE: 's3', S3_BUCKET: 'calls', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY_ID: 'k', S3_SECRET_ACCESS_KEY: 's', RECORDING_ENCODER_WORKERS: '2' });
    expect(c.recordings).toEqual({ kind: 's3', bucket: 'calls', region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, accessKeyId: 'k', secretAccessKey: 's', prefix: 'recordings/' });
    expect(c.recordingEncoderWorkers).toBe(2);
  });

  it('lists every problem at once, the store variables with the others', () => {
    let message = '';
    try {
      loadGatewayConfig({ GATEWAY_PORT: '70000', RECORDING_ENCODER_WORKERS: '0', RECORDINGS_STORE: 's3', S3_ACCESS_KEY_ID: 'k' });
    } catch (err) {
      message = (err as Error).message;
    }
    for (const name of ['GATEWAY_PORT', 'RECORDING_ENCODER_WORKERS', 'S3_BUCKET', 'S3_SECRET_ACCESS_KEY']) expect(message).toContain(`- ${name}:`);
    expect(() => loadGatewayConfig({ RECORDINGS_STORE: 'ftp' })).toThrow(/RECORDINGS_STORE/);
  });
});
