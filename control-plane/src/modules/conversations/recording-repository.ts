import { and, asc, eq, inArray, isNotNull, lte, sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { conversations } from '../../db/schema/conversations.js';
import type { ConversationStatus, StoredRecording } from '../../db/schema/conversations.js';

/** What the recording routes need of a conversation. */
export interface RecordingRow {
  id: string;
  tenantId: string;
  status: ConversationStatus;
  /** Object key in the recording store; null when none is stored (never recorded, purged). */
  recordingKey: string | null;
  recording: StoredRecording | null;
}

/** One retention batch: rows claimed, and of those purged (object deleted, row updated) or left for a later run. */
export interface PurgeBatch {
  claimed: number;
  purged: number;
  failed: number;
}

const columns = {
  id: conversations.id,
  tenantId: conversations.tenantId,
  status: conversations.status,
  recordingKey: conversations.recordingKey,
  recording: conversations.recording,
};

/** Queries of recording links, the local link route and the retention job. */
export class RecordingRepository {
  constructor(private readonly db: Db) {}

  /** A conversation of the tenant (another tenant's is undefined, like a missing one). */
  async find(tenantId: string, id: string): Promise<RecordingRow | undefined> {
    const [row] = await this.db
      .select(columns)
      .from(conversations)
      .where(and(eq(conversations.tenantId, tenantId), eq(conversations.id, id)));
    return row;
  }

  /** A conversation by id alone, for a link whose signature already proved who issued it. */
  async findById(id: string): Promise<RecordingRow | undefined> {
    const [row] = await this.db.select(columns).from(conversations).where(eq(conversations.id, id));
    return row;
  }

  /**
   * Claims up to `limit` conversations whose recording is due (`recording_expires_at <= now`)
   * with `FOR UPDATE SKIP LOCKED`, so replicas running this at once take different rows;
   * calls `remove` for each key (the object goes first), then, in the same transaction,
   * clears the key and marks `recording` `{available: false, deletedAt}` for the rows whose
   * object is gone. A row whose `remove` returned false stays due for a later run. A
   * conversation being deleted meanwhile is locked by its DELETE and skipped here.
   */
  async purgeDue(now: Date, limit: number, remove: (keys: string[]) => Promise<Set<string>>): Promise<PurgeBatch> {
    return this.db.transaction(async (tx) => {
      const due = await tx
        .select({ id: conversations.id, key: conversations.recordingKey })
        .from(conversations)
        .where(and(isNotNull(conversations.recordingKey), lte(conversations.recordingExpiresAt, now)))
        .orderBy(asc(conversations.recordingExpiresAt))
        .limit(limit)
        .for('update', { skipLocked: true });
      if (due.length === 0) return { claimed: 0, purged: 0, failed: 0 };
      const removed = await remove(due.map((r) => r.key!));
      const done = due.filter((r) => removed.has(r.key!)).map((r) => r.id);
      if (done.length > 0) {
        await tx
          .update(conversations)
          .set({
            recordingKey: null,
            recording: sql`coalesce(${conversations.recording}, '{}'::jsonb) || jsonb_build_object('available', false, 'deletedAt', ${now.toISOString()}::text)`,
            updatedAt: sql`now()`,
          })
          .where(inArray(conversations.id, done));
      }
      return { claimed: due.length, purged: done.length, failed: due.length - done.length };
    });
  }
}
