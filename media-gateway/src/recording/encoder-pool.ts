import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { mulawDecode } from '@vap/voice-pipeline';
import type { EncodeRequest } from './encode-recording.js';

/** @internal A job posted to a worker. */
export interface EncodeJob {
  id: number;
  request: EncodeRequest;
}

/** @internal A worker's answer. */
export type EncodeResult = { id: number; ok: true; bytes: Uint8Array } | { id: number; ok: false; message: string };

/** @internal What a worker starts with. */
export interface EncoderWorkerData {
  /** The 256 PCM values of the μ-law codes, from the pipeline's G.711 decoder. */
  mulawTable: Int16Array;
}

interface Pending {
  request: EncodeRequest;
  resolve: (bytes: Uint8Array) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  job: (Pending & { id: number }) | null;
}

const WORKER_URL = new URL('./encoder-worker.mjs', import.meta.url);

/**
 * The gateway's recording encoders: a few `worker_threads` (default 1) that turn finished
 * calls' tracks into MP3/WAV files, so the event loop that paces live calls never runs
 * the encoder. Jobs queue in order; workers start on the first job and are kept (unref'd
 * while idle). A worker that dies fails its job and is replaced for the next one.
 */
export class EncoderPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private readonly workerData: EncoderWorkerData;
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly opts: {
      size: number;
      logger: Logger;
      /** The worker's entry module; default `encoder-worker.mjs` (tests start others). */
      workerUrl?: URL;
    },
  ) {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new Error('EncoderPool: size must be a positive integer');
    this.workerData = { mulawTable: mulawDecode(Uint8Array.from({ length: 256 }, (_, code) => code)) };
  }

  /** Jobs queued or running. */
  get pending(): number {
    return this.queue.length + this.slots.filter((s) => s.job).length;
  }

  /**
   * Encodes a finished call. The tracks' chunk buffers are transferred to the worker:
   * they are unusable here afterwards. Rejects when the encoder fails or its worker dies.
   */
  encode(request: EncodeRequest): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new Error('the encoder pool is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.dispatch();
    });
  }

  /** Finishes every queued job, then stops the workers. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pending > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < this.opts.size) slot = this.spawn();
      if (!slot) return;
      const pending = this.queue.shift()!;
      const job = { ...pending, id: this.nextId++ };
      slot.job = job;
      slot.worker.ref();
      const transfer = [...pending.request.caller, ...pending.request.agent].filter((c): c is Uint8Array => c !== null).map((c) => c.buffer as ArrayBuffer);
      const message: EncodeJob = { id: job.id, request: pending.request };
      try {
        slot.worker.postMessage(message, transfer);
      } catch (err) {
        slot.job = null;
        job.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    if (this.pending === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private spawn(): Slot {
    const worker = new Worker(this.opts.workerUrl ?? WORKER_URL, { workerData: this.workerData, name: 'recording-encoder' });
    const slot: Slot = { worker, job: null };
    worker.unref();
    worker.on('message', (result: EncodeResult) => {
      const job = slot.job;
      if (!job || job.id !== result.id) return;
      slot.job = null;
      worker.unref();
      if (result.ok) job.resolve(result.bytes);
      else job.reject(new Error(`recording encoder: ${result.message}`));
      this.dispatch();
    });
    const lost = (err: Error) => {
      const index = this.slots.indexOf(slot);
      if (index < 0) return;
      this.slots.splice(index, 1);
      this.opts.logger.error({ err }, 'recording encoder worker died');
      const job = slot.job;
      slot.job = null;
      job?.reject(err);
      this.dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`recording encoder worker exited with code ${code}`)));
    this.slots.push(slot);
    return slot;
  }
}
