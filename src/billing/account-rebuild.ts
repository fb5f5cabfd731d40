// Rebuilds one account missing from Redis out of the ledger, exactly while its org settles
// (docs/decisions.md, 297). Settle does not charge an account that is not in Redis, so the
// installed amount must count every record settled before the install, once:
//
// 0. the account is listed in the org's `rebuilds` hash under a token, in the same atomic step
// as a check that it is missing (if it is there, another rebuild installed it: done): from
// then on, each settle that meets it missing adds what it would have charged to that field
// (settle.lua), until an install takes the listing off; 1. the stream's
// deletion count is read; 2. a ledger snapshot is taken; 3. the org's stream and the
// `rebuilds` hash are read in one MULTI (a cut). A record settled before the cut is in the
// snapshot (committed before it) or in the cut, or both (dropped from the cut by request id,
// in the snapshot); it is in neither only if the writer committed it after the snapshot and
// removed it before the cut, which moves the deletion count between 1 and 3: then the rebuild
// measures again (a window of one round trip). 4. account-rebuild.lua installs the amount
// plus the field's growth since the cut, if the cut and the install both find the rebuild's
// token (no install came between, so the account was missing throughout; else it measures
// again): what settled after the cut, none of it in the
// snapshot, wherever the writer has moved it meanwhile (decision 304: a busy org's rebuild
// is not refused for its traffic). A record settled after the install is charged by settle.
import { randomBytes } from 'node:crypto';
import { readOnlySnapshot, type DbClient, type DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import { listingField, type UnwrittenUsage } from '../ledger/unwritten-usage.js';
import type { UsageRecord } from '../ledger/usage-record.js';

/**
 * Measurements tried: one the writer may have cut short is taken again, and installed anyway
 * the last time; only installs taking the account's listing off every time make it give up.
 */
const MAX_ATTEMPTS = 8;
const RETRY_PAUSE_MS = 10;

/** No measurement could be used (see MAX_ATTEMPTS). */
export class AccountRebuildBusyError extends Error {
  override readonly name = 'AccountRebuildBusyError';
}

/** The accounts a rebuild installs. */
export type AccountKind = 'wallet' | 'org_cap' | 'conn_cap' | 'user';

/**
 * How a rebuild ended: `installed` it, installed it `inexact` (see rebuildAccount), found it
 * `present` (another rebuild installed it), or `gave_up` (AccountRebuildBusyError: the
 * request answers 503); after how many measurements.
 */
export type RebuildObserver = (
  kind: AccountKind,
  outcome: 'installed' | 'inexact' | 'present' | 'gave_up',
  measurements: number,
) => void;

export interface RebuildTarget {
  readonly kind: AccountKind;
  readonly orgId: string;
  readonly key: string;
  readonly field: 'balance' | 'spent';
  /** When the account goes (a period's end and its grace); null: never (the wallet). */
  readonly expireAtMs: number | null;
  /** Only stream entries that mention this id are parsed (a connection's, a user's). */
  readonly mentioning?: string | undefined;
  /** The account's amount from the ledger snapshot and the records it does not have. */
  amount(snapshot: DbClient, unwritten: readonly UsageRecord[]): Promise<bigint>;
}

export interface RebuildParts {
  readonly db: DbPool;
  readonly keys: RedisKeys;
  readonly scripts: Pick<RedisScripts, 'accountRebuild'>;
  readonly unwritten: UnwrittenUsage;
  /** Hears how each rebuild ended (the gateway counts them: gw_account_rebuilds_total). */
  readonly observe?: RebuildObserver | undefined;
}

/** Installs `target` unless it is in Redis already (then leaves it untouched). */
export async function rebuildAccount(parts: RebuildParts, target: RebuildTarget): Promise<void> {
  const { db, keys, scripts, unwritten } = parts;
  const observe = parts.observe ?? (() => undefined);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    // null: the account is in Redis (another rebuild installed it since it was found missing).
    const listing = await unwritten.listRebuild(target.orgId, target.key);
    if (listing === null) return observe(target.kind, 'present', attempt);
    // Read with a connection in hand, so that the window to the cut is a few round trips,
    // not a wait for the pool (a month's start rebuilds thousands of accounts at once).
    let deletedBefore = Number.NaN;
    const lastTry = attempt === MAX_ATTEMPTS - 1;
    const measured = await readOnlySnapshot(
      db,
      async (snapshot) => {
        const cut = await unwritten.cut(target.orgId, unwritten.mark());
        // Listed before the cut was sent, the account is in it with this listing's token unless
        // an install took it off meanwhile (then the account is back, or was lost again and
        // listed anew: measure again).
        const missedAtCut = cut.missed.get(target.key);
        const listed = cut.missed.get(listingField(target.key)) === listing;
        if (missedAtCut === undefined || !listed) return undefined;
        // A record the writer committed after the snapshot and removed before the cut is in
        // neither. Measured again; the last time, installed anyway (`inexact`: short by what
        // the writer moved in that window, which `gw reconcile --repair` restores) rather than
        // refusing the org's requests with 503 while its traffic goes on.
        const exact = cut.deletions === deletedBefore;
        if (!exact && !lastTry) return undefined;
        const records = await unwritten.unwrittenAt(snapshot, target.orgId, cut, target.mentioning);
        return { missedAtCut, exact, amount: await target.amount(snapshot, records) };
      },
      async () => {
        deletedBefore = await unwritten.deletions(target.orgId);
      },
    );
    if (measured) {
      const outcome = (await scripts.accountRebuild(
        {
          account: target.key,
          expiries: keys.holdExpiries(target.key),
          rebuilds: keys.rebuilds(target.orgId),
        },
        {
          field: target.field,
          amount_nano: measured.amount.toString(),
          expire_at_ms: target.expireAtMs === null ? '' : String(target.expireAtMs),
          missed_at_cut: measured.missedAtCut,
          generation: randomBytes(8).toString('hex'),
          listing_field: listingField(target.key),
          listing,
        },
      )) as [number, string?];
      if (outcome[0] !== -1) {
        const installed = measured.exact ? 'installed' : 'inexact';
        return observe(target.kind, outcome[0] === 1 ? installed : 'present', attempt + 1);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS * (attempt + 1)));
  }
  observe(target.kind, 'gave_up', MAX_ATTEMPTS);
  throw new AccountRebuildBusyError(
    `account ${target.key} not rebuilt: installs took its listing off during each of ${MAX_ATTEMPTS} measurements`,
  );
}
