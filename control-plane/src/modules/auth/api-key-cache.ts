import type { Principal } from './principal.js';

/** A usable API key as its lookup found it. */
export interface CachedKey {
  principal: Principal;
  /** Epoch ms at which the key expires, or null. */
  expiresAtMs: number | null;
}

interface Entry {
  value: CachedKey;
  /** Epoch ms after which the entry is read again from the database. */
  freshUntilMs: number;
}

/**
 * Usable API keys by key hash, for a few seconds (LRU, bounded). What a key may do changes
 * through {@link invalidateKey} (revocation: this replica at once, the others through the
 * bus event `apiKeyChanged`); tenant status, plan and rate-limit changes apply within
 * `ttlMs`. Unknown, revoked and expired keys are never cached.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly opts: { ttlMs: number; maxEntries: number; now?: () => number },
  ) {}

  get(keyHash: string): CachedKey | undefined {
    const entry = this.entries.get(keyHash);
    if (!entry) return undefined;
    if (entry.freshUntilMs <= this.nowMs()) {
      this.entries.delete(keyHash);
      return undefined;
    }
    // Most recently used last (Map keeps insertion order).
    this.entries.delete(keyHash);
    this.entries.set(keyHash, entry);
    return entry.value;
  }

  set(keyHash: string, value: CachedKey): void {
    if (this.opts.ttlMs <= 0) return;
    this.entries.delete(keyHash);
    this.entries.set(keyHash, { value, freshUntilMs: this.nowMs() + this.opts.ttlMs });
    while (this.entries.size > this.opts.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  /** Drops every entry of the key `keyId` (its hash is not known to the caller). */
  invalidateKey(keyId: string): void {
    for (const [hash, entry] of this.entries) {
      if (entry.value.principal.actorId === keyId) this.entries.delete(hash);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  private nowMs(): number {
    return (this.opts.now ?? Date.now)();
  }
}
