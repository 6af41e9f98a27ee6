import { and, asc, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { phoneNumbers } from '../db/schema/phone-numbers.js';
import type { TelephonyProvider } from '../modules/telephony/providers/types.js';

/** One number the repair looked at. */
export interface RepairItem {
  id: string;
  phoneNumber: string;
  storedProviderSid: string | null;
  /** Telnyx's phone-number id for the number; null when Telnyx does not have it or the lookup failed. */
  canonicalProviderSid: string | null;
  /** `repaired` (in a dry run: would be), `already-correct`, `missing-on-telnyx`, or `error: <text>`. */
  action: string;
}

/** The repair's summary (spec "Telephony debug"). */
export interface RepairSummary {
  dryRun: boolean;
  scanned: number;
  repaired: number;
  alreadyCorrect: number;
  missingOnProvider: number;
  errors: number;
  items: RepairItem[];
}

/**
 * `repair-provider-sids`: Telnyx numbers bought with the order entry's id stored as their
 * provider id (not the phone-number id release and updates need) get the canonical id,
 * looked up by E.164. Every active `telnyx` number of every tenant is checked, one lookup
 * at a time (the carrier's rate limit matters more than speed here). A dry run writes
 * nothing and reports what a real run would do (`repaired` = would be repaired).
 */
export async function repairTelnyxProviderSids(db: Db, telnyx: TelephonyProvider, dryRun: boolean): Promise<RepairSummary> {
  const rows = await db
    .select({ id: phoneNumbers.id, phoneNumber: phoneNumbers.phoneNumber, providerSid: phoneNumbers.providerSid })
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.provider, 'telnyx'), eq(phoneNumbers.status, 'active')))
    .orderBy(asc(phoneNumbers.provisionedAt), asc(phoneNumbers.id));
  const summary: RepairSummary = { dryRun, scanned: rows.length, repaired: 0, alreadyCorrect: 0, missingOnProvider: 0, errors: 0, items: [] };
  for (const row of rows) {
    const item: RepairItem = { id: row.id, phoneNumber: row.phoneNumber, storedProviderSid: row.providerSid, canonicalProviderSid: null, action: '' };
    summary.items.push(item);
    let canonical: { providerSid: string } | null;
    try {
      canonical = await telnyx.findOwnedNumber(row.phoneNumber);
    } catch (err) {
      summary.errors++;
      item.action = `error: ${err instanceof Error ? err.message : 'lookup failed'}`;
      continue;
    }
    if (!canonical) {
      summary.missingOnProvider++;
      item.action = 'missing-on-telnyx';
      continue;
    }
    item.canonicalProviderSid = canonical.providerSid;
    if (canonical.providerSid === row.providerSid) {
      summary.alreadyCorrect++;
      item.action = 'already-correct';
      continue;
    }
    if (!dryRun) {
      // Only if the row still holds what was read: a concurrent change (release, another repair) wins.
      const updated = await db
        .update(phoneNumbers)
        .set({ providerSid: canonical.providerSid })
        .where(and(eq(phoneNumbers.id, row.id), row.providerSid === null ? isNull(phoneNumbers.providerSid) : eq(phoneNumbers.providerSid, row.providerSid)))
        .returning({ id: phoneNumbers.id });
      if (updated.length === 0) {
        summary.errors++;
        item.action = 'error: the number changed during the repair; run it again';
        continue;
      }
    }
    summary.repaired++;
    item.action = 'repaired';
  }
  return summary;
}
