import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { AppError, LocalObjectStore, S3ObjectStore } from '@vap/shared';
import type { ObjectStore } from '@vap/shared';
import type { Principal } from '../auth/principal.js';
import { RECORDING_CONTENT_TYPES, RECORDING_LINK_TTL_SECONDS } from './recording-links.js';
import type { RecordingFormat, RecordingLinks } from './recording-links.js';
import type { RecordingRepository, RecordingRow } from './recording-repository.js';

/** The recording link (spec "Recording link"). */
export interface RecordingLinkView {
  url: string;
  format: RecordingFormat;
  durationSeconds: number;
  /** When `url` stops working (ISO 8601), one hour after it was issued. */
  expiresAt: string;
}

/** An opened local recording for the signed-link route; the caller streams and closes `file`. */
export interface OpenedRecording {
  file: FileHandle;
  sizeBytes: number;
  contentType: string;
  /** Seconds the link has left (for Cache-Control). */
  maxAgeSeconds: number;
}

/**
 * Recording links: an S3 pre-signed GetObject URL, or, for the local store, a URL of this
 * control plane signed with {@link RecordingLinks}, which {@link openLinked} checks.
 */
export class RecordingService {
  constructor(
    private readonly deps: {
      repo: RecordingRepository;
      store: ObjectStore;
      links: RecordingLinks;
      /** Clock (ms) for link expiry; tests move it. */
      now: () => number;
    },
  ) {}

  /**
   * A link to the conversation's recording, valid {@link RECORDING_LINK_TTL_SECONDS}.
   * 404 `conversation-not-found` (missing, another tenant's), 409 `invalid-state` while
   * the call is in progress, 404 `recording-not-found` when none is stored (not recorded,
   * failed, or purged by retention).
   */
  async link(p: Principal, id: string): Promise<RecordingLinkView> {
    const row = await this.deps.repo.find(p.tenantId, id);
    if (!row) throw new AppError('conversation-not-found', `Conversation ${id} was not found.`);
    if (row.status === 'in_progress') throw new AppError('invalid-state', `Conversation ${id} is still in progress; its recording is stored when the call ends.`);
    const { key, format, recording } = stored(row);
    if (!(await this.storeCall(() => this.deps.store.exists(key)))) throw recordingGone(id);
    const nowMs = this.deps.now();
    const expiresAtSec = Math.floor(nowMs / 1000) + RECORDING_LINK_TTL_SECONDS;
    const store = this.deps.store;
    let url: string;
    if (store instanceof S3ObjectStore) {
      // Signed for the same whole second the expiry counts from (SigV4 dates have no fraction).
      url = await this.storeCall(() => store.presignGet(key, RECORDING_LINK_TTL_SECONDS, { now: new Date((expiresAtSec - RECORDING_LINK_TTL_SECONDS) * 1000) }));
    } else if (store instanceof LocalObjectStore) {
      url = this.deps.links.url(row.id, format, expiresAtSec);
    } else {
      throw new Error(`recording links are not supported for a ${store.kind} store of this kind`);
    }
    return { url, format, durationSeconds: Math.round(recording.durationSeconds), expiresAt: new Date(expiresAtSec * 1000).toISOString() };
  }

  /**
   * Checks a local recording link and opens its file. 403 `recording-link-invalid` for a
   * signature that does not match or a link past its expiry (checked before anything is
   * looked up, so a guessed link learns nothing); 404 `recording-not-found` when the
   * conversation or its recording is gone (deleted, purged).
   */
  async openLinked(conversationId: string, format: RecordingFormat, expiresAtSec: number, sig: string): Promise<OpenedRecording> {
    if (!this.deps.links.verify(conversationId, format, expiresAtSec, sig)) {
      throw new AppError('recording-link-invalid', 'The link signature does not match; use the link exactly as issued.');
    }
    const nowMs = this.deps.now();
    if (nowMs >= expiresAtSec * 1000) {
      throw new AppError('recording-link-invalid', `The link expired at ${new Date(expiresAtSec * 1000).toISOString()}; ask for a new one.`);
    }
    const store = this.deps.store;
    if (!(store instanceof LocalObjectStore)) throw recordingGone(conversationId);
    const row = await this.deps.repo.findById(conversationId);
    if (!row || row.recordingKey === null || row.recording?.format !== format) throw recordingGone(conversationId);
    let file: FileHandle;
    try {
      file = await open(store.pathOf(row.recordingKey), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw recordingGone(conversationId);
      throw err;
    }
    try {
      const info = await file.stat();
      return { file, sizeBytes: info.size, contentType: RECORDING_CONTENT_TYPES[format], maxAgeSeconds: Math.max(0, expiresAtSec - Math.ceil(nowMs / 1000)) };
    } catch (err) {
      await file.close();
      throw err;
    }
  }

  private async storeCall<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new AppError('unavailable', 'The recording store is not reachable; retry later.', { cause: err });
    }
  }
}

function recordingGone(id: string): AppError {
  return new AppError('recording-not-found', `Conversation ${id} has no recording (not recorded, or deleted when its retention ran out).`);
}

function stored(row: RecordingRow): { key: string; format: RecordingFormat; recording: NonNullable<RecordingRow['recording']> } {
  const rec = row.recording;
  if (row.recordingKey === null || !rec || rec.available === false) throw recordingGone(row.id);
  return { key: row.recordingKey, format: rec.format, recording: rec };
}
