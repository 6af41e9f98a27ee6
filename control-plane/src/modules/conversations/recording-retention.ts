import type { Logger } from 'pino';
import { AppError } from '@vap/shared';
import type { ObjectStore } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { RecordingRepository } from './recording-repository.js';

/**
 * Removes a conversation's recording object from the store (the conversation DELETE calls
 * it before its transaction commits). Deleting a missing object succeeds.
 * @throws AppError `unavailable` (503) when there is no store or it fails, so nothing is deleted and the caller may retry.
 */
export async function deleteRecordingObject(store: ObjectStore | undefined, key: string): Promise<void> {
  if (!store) throw new AppError('unavailable', 'No recording store is configured, so the recording cannot be deleted; nothing was deleted.');
  try {
    await store.delete(key);
  } catch (err) {
    throw new AppError('unavailable', 'The recording store could not delete the recording; nothing was deleted. Retry later.', { cause: err });
  }
}

/** What one retention run did. */
export interface RetentionResult {
  /** Recordings deleted from the store and marked unavailable. */
  purged: number;
  /** Due recordings the store failed to delete; they stay due and are retried on the next run. */
  failed: number;
}

/**
 * Enforces `recording.storageRetentionDays`: deletes recordings whose retention ran out
 * (`recording_expires_at`, fixed when the call ended) from the store and marks them
 * `available: false` with `deletedAt`. Works in batches of `batchSize` claimed with
 * `FOR UPDATE SKIP LOCKED`, so any number of replicas may run it at once; a run that
 * crashes after deleting objects leaves their rows due, and deleting them again is harmless.
 */
export class RecordingRetention {
  private readonly repo: RecordingRepository;
  private readonly batchSize: number;
  private readonly concurrency: number;

  constructor(private readonly deps: { db: Db; store: ObjectStore; log: Logger; batchSize?: number; concurrency?: number }) {
    this.repo = new RecordingRepository(deps.db);
    this.batchSize = deps.batchSize ?? 100;
    this.concurrency = deps.concurrency ?? 8;
  }

  /** Purges every recording due at `now`. A batch with store failures ends the run (the store is likely down). */
  async purge(now: Date): Promise<RetentionResult> {
    let purged = 0;
    let failed = 0;
    for (;;) {
      const batch = await this.repo.purgeDue(now, this.batchSize, (keys) => this.removeAll(keys));
      purged += batch.purged;
      failed += batch.failed;
      if (batch.failed > 0 || batch.claimed < this.batchSize) break;
    }
    if (purged > 0 || failed > 0) this.deps.log.info({ purged, failed }, 'recording retention ran');
    return { purged, failed };
  }

  /** Deletes the objects, `concurrency` at a time; answers the keys that are gone. */
  private async removeAll(keys: string[]): Promise<Set<string>> {
    const gone = new Set<string>();
    let next = 0;
    const worker = async () => {
      while (next < keys.length) {
        const key = keys[next++]!;
        try {
          await this.deps.store.delete(key);
          gone.add(key);
        } catch (err) {
          this.deps.log.warn({ err, key }, 'recording retention could not delete an object; will retry');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, keys.length) }, worker));
    return gone;
  }
}
