import { randomFillSync } from 'node:crypto';

/** Id prefixes from the spec ("Resources and their fields"), plus a few internal ones. */
export const ID_PREFIXES = {
  agt: 'agent',
  conv: 'conversation',
  obc: 'outbound call',
  num: 'phone number',
  sip: 'SIP trunk',
  kb: 'knowledge-base document',
  ten: 'tenant',
  agn: 'agency',
  usr: 'user',
  key: 'API key',
  sub: 'subscription',
  inv: 'invoice or invitation',
  pm: 'payment method',
  rpt: 'report',
  evt: 'event',
  whk: 'webhook configuration',
  test: 'test session',
  trace: 'trace',
  msg: 'conversation message (internal)',
  cce: 'carrier call event (internal)',
  turn: 'transcript turn (internal)',
  gw: 'media gateway instance (internal)',
  job: 'background job (internal)',
  ses: 'login session (internal)',
  rt: 'refresh token (internal)',
  mfa: 'MFA challenge (internal)',
  rc: 'recovery code (internal)',
} as const;

export type IdPrefix = keyof typeof ID_PREFIXES;
export type Id<P extends IdPrefix> = `${P}_${string}`;

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
const RANDOM_CHARS = 16; // 80 bits of randomness after the 48-bit time part

/**
 * Random bytes for ids, drawn from the CSPRNG a block at a time: one native call per 256
 * ids instead of one `randomBytes` per id, which cost ~2.4 µs (a request id per API request
 * made it ~8 % of a GET's profile, #5). As with Node's own `randomUUID` cache, each byte is
 * used once. Per thread (module state), so threads never share bytes.
 */
const POOL = new Uint8Array(RANDOM_CHARS * 256);
let poolAt = POOL.length;

/**
 * A new id of the given type: `<prefix>_<26 chars>`, the first 10 characters encoding the
 * creation time in milliseconds (Crockford base32), so ids sort roughly by creation and
 * B-tree inserts stay local; the other 16 are random (80 bits).
 */
export function newId<P extends IdPrefix>(prefix: P, nowMs: number = Date.now()): Id<P> {
  let time = '';
  let t = nowMs;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  let rand = '';
  for (let i = 0; i < RANDOM_CHARS; i++) rand += CROCKFORD[POOL[poolAt + i]! & 31]!;
  poolAt += RANDOM_CHARS;
  return `${prefix}_${time}${rand}`;
}

const ID_BODY = /^[0-9a-z]{26}$/;

/** True when `value` is a well-formed id of the given type. */
export function isId<P extends IdPrefix>(prefix: P, value: string): value is Id<P> {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}
