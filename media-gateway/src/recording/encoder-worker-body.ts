/**
 * The recording encoder worker's message loop (loaded by `encoder-worker.mjs`): one
 * {@link EncodeJob} in, one {@link EncodeResult} out, the bytes transferred, not copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { encodeRecording } from './encode-recording.js';
import type { EncodeJob, EncodeResult, EncoderWorkerData } from './encoder-pool.js';

const { mulawTable } = workerData as EncoderWorkerData;
const port = parentPort!;

port.on('message', (job: EncodeJob) => {
  let result: EncodeResult;
  try {
    const bytes = encodeRecording(job.request, mulawTable);
    result = { id: job.id, ok: true, bytes };
    port.postMessage(result, [bytes.buffer as ArrayBuffer]);
  } catch (err) {
    result = { id: job.id, ok: false, message: err instanceof Error ? err.message : String(err) };
    port.postMessage(result);
  }
});
