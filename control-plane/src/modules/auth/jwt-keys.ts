import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK } from 'jose';
import type { CryptoKey, JWK } from 'jose';
import type pg from 'pg';
import { inPgTransaction } from '../../db/pg-transaction.js';
import type { SecretBox } from '../../secret-box.js';

/** The JWT signature algorithm of access tokens. */
export const JWT_ALGORITHM = 'ES256';

// Serialises key creation and rotation across control planes sharing the database
// (other advisory locks: 7_361_001 migrations, 7_361_002 bootstrap).
const SIGNING_KEY_LOCK_ID = 7_361_010;

/** The key access tokens are signed with now. */
export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

interface KeyRow {
  kid: string;
  public_jwk: JWK;
  private_jwk_sealed: string;
  retired_at: Date | null;
}

interface CachedPublicKey {
  /** null: no such kid (cached briefly, so garbage kids do not each cost a query). */
  key: CryptoKey | null;
  retiredAtMs: number | null;
  loadedAtMs: number;
}

export interface JwtKeysOptions {
  pool: pg.Pool;
  secrets: SecretBox;
  now?: () => number;
  /**
   * How long a replica trusts what it read about keys (ms). A rotation on another replica
   * is seen by this one within this time; until then it keeps signing with the old key,
   * which still verifies. Default 30 s.
   */
  cacheTtlMs?: number;
  /** How long a retired key still verifies (ms): at least the access-token lifetime plus `cacheTtlMs`. */
  retiredKeyGraceMs: number;
}

/**
 * ES256 signing keys for access tokens, kept in `signing_keys` (private JWK sealed with
 * the SecretBox), so every control plane on the database signs and verifies alike. The
 * first key is made on first use; {@link rotate} makes a new active key and retires the
 * old one, which keeps verifying for `retiredKeyGraceMs` (its tokens expire before then).
 */
export class JwtKeys {
  private readonly pool: pg.Pool;
  private readonly secrets: SecretBox;
  private readonly now: () => number;
  private readonly cacheTtlMs: number;
  private readonly retiredKeyGraceMs: number;
  private active: { key: SigningKey; loadedAtMs: number } | null = null;
  private activeLoading: Promise<SigningKey> | null = null;
  private readonly publicKeys = new Map<string, CachedPublicKey>();

  constructor(opts: JwtKeysOptions) {
    this.pool = opts.pool;
    this.secrets = opts.secrets;
    this.now = opts.now ?? Date.now;
    this.cacheTtlMs = opts.cacheTtlMs ?? 30_000;
    this.retiredKeyGraceMs = opts.retiredKeyGraceMs;
  }

  /** The active key, created if the database has none. */
  async signingKey(): Promise<SigningKey> {
    const nowMs = this.now();
    if (this.active && nowMs - this.active.loadedAtMs < this.cacheTtlMs) return this.active.key;
    this.activeLoading ??= this.loadActive().finally(() => {
      this.activeLoading = null;
    });
    return this.activeLoading;
  }

  /**
   * The public key for a token's `kid`, or null when the kid is unknown or retired longer
   * than the grace period ago.
   */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    const nowMs = this.now();
    let cached = this.publicKeys.get(kid);
    if (!cached || nowMs - cached.loadedAtMs >= this.cacheTtlMs) {
      cached = await this.loadPublic(kid, nowMs);
    }
    if (!cached.key) return null;
    if (cached.retiredAtMs !== null && cached.retiredAtMs + this.retiredKeyGraceMs <= nowMs) return null;
    return cached.key;
  }

  /**
   * Makes a new active key and retires the current one(s). Tokens signed before keep
   * verifying until they expire. Returns the new kid.
   */
  async rotate(): Promise<string> {
    const created = await inPgTransaction(this.pool, async (client) => {
      await client.query('select pg_advisory_xact_lock($1)', [SIGNING_KEY_LOCK_ID]);
      const nowDate = new Date(this.now());
      const key = await this.createKey(client, nowDate);
      await client.query('update signing_keys set retired_at = $1 where retired_at is null and kid <> $2', [nowDate, key.kid]);
      return key;
    });
    this.active = { key: created, loadedAtMs: this.now() };
    this.publicKeys.clear();
    return created.kid;
  }

  /** The public keys that may verify a live token (active and recently retired), as a JWK set. */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.signingKey();
    const cutoff = new Date(this.now() - this.retiredKeyGraceMs);
    const res = await this.pool.query<{ kid: string; public_jwk: JWK }>('select kid, public_jwk from signing_keys where retired_at is null or retired_at > $1 order by created_at desc', [cutoff]);
    return { keys: res.rows.map((r) => ({ ...r.public_jwk, kid: r.kid, alg: JWT_ALGORITHM, use: 'sig' })) };
  }

  private async loadActive(): Promise<SigningKey> {
    const found = await this.pool.query<KeyRow>('select kid, public_jwk, private_jwk_sealed, retired_at from signing_keys where retired_at is null order by created_at desc limit 1');
    let key: SigningKey;
    if (found.rows[0]) {
      key = await this.openPrivate(found.rows[0]);
    } else {
      // First use: one replica creates the key; the others wait on the lock and then read it.
      key = await inPgTransaction(this.pool, async (client) => {
        await client.query('select pg_advisory_xact_lock($1)', [SIGNING_KEY_LOCK_ID]);
        const again = await client.query<KeyRow>('select kid, public_jwk, private_jwk_sealed, retired_at from signing_keys where retired_at is null order by created_at desc limit 1');
        return again.rows[0] ? await this.openPrivate(again.rows[0]) : await this.createKey(client, new Date(this.now()));
      });
    }
    this.active = { key, loadedAtMs: this.now() };
    return key;
  }

  private async loadPublic(kid: string, nowMs: number): Promise<CachedPublicKey> {
    const res = await this.pool.query<{ public_jwk: JWK; retired_at: Date | null }>('select public_jwk, retired_at from signing_keys where kid = $1', [kid]);
    const row = res.rows[0];
    const entry: CachedPublicKey = row
      ? { key: (await importJWK(row.public_jwk, JWT_ALGORITHM)) as CryptoKey, retiredAtMs: row.retired_at?.getTime() ?? null, loadedAtMs: nowMs }
      : { key: null, retiredAtMs: null, loadedAtMs: nowMs };
    // Bounded: unknown kids are cached too, so cap the map rather than let garbage grow it.
    if (this.publicKeys.size >= 1000) this.publicKeys.clear();
    this.publicKeys.set(kid, entry);
    return entry;
  }

  private async openPrivate(row: KeyRow): Promise<SigningKey> {
    const jwk = JSON.parse(this.secrets.open(row.private_jwk_sealed)) as JWK;
    return { kid: row.kid, privateKey: (await importJWK(jwk, JWT_ALGORITHM)) as CryptoKey };
  }

  private async createKey(client: pg.PoolClient, createdAt: Date): Promise<SigningKey> {
    const { publicKey, privateKey } = await generateKeyPair(JWT_ALGORITHM, { extractable: true });
    const kid = randomBytes(12).toString('base64url');
    const publicJwk = await exportJWK(publicKey);
    const privateJwk = await exportJWK(privateKey);
    await client.query('insert into signing_keys (kid, algorithm, public_jwk, private_jwk_sealed, created_at) values ($1, $2, $3, $4, $5)', [
      kid,
      JWT_ALGORITHM,
      JSON.stringify(publicJwk),
      this.secrets.seal(JSON.stringify(privateJwk)),
      createdAt,
    ]);
    return { kid, privateKey };
  }
}
