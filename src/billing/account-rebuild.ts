// Rebuilds one account missing from Redis out of the ledger, exactly while its org settles
// (docs/decisions.md, 297). Settle does not charge an account that is not in Redis, so the
// installed amount must count every record settled before the install, once:
//
// 1. the stream's deletion count is read; 2. a ledger snapshot is taken; 3. the org's stream
// is read in one MULTI (a cut: its entries, last id and counters). A record settled before
// the cut is in the snapshot (committed before it) or in the cut, or both (dropped from the
// cut by request id, in the snapshot); it is in neither only if the writer committed it after
// the snapshot and removed it before the cut, which moves the deletion count between 1 and 3:
// then the rebuild measures again. 4. account-rebuild.lua installs the amount plus the records
// settled since the cut, read from the stream in the same atomic step; none of them can be in
// the snapshot, and if one left the stream meanwhile the script refuses and the rebuild
// measures again. A record settled after the install is charged by settle itself.
import { randomBytes } from 'node:crypto';
import { readOnlySnapshot, type DbClient, type DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import type { UsageRecord } from '../ledger/usage-record.js';

/** Measurements tried before the rebuild gives up (the writer removed records every time). */
const MAX_ATTEMPTS = 8;
const RETRY_PAUSE_MS = 10;

/** The writer removed records from the org's stream during every measurement. */
export class AccountRebuildBusyError extends Error {
  override readonly name = 'AccountRebuildBusyError';
}

export interface RebuildTarget {
  readonly orgId: string;
  readonly key: string;
  readonly field: 'balance' | 'spent';
  /** When the account goes (a period's end and its grace); null: never (the wallet). */
  readonly expireAtMs: number | null;
  /** Only stream entries that mention this id are parsed (a connection's, a user's). */
  readonly mentioning?: string | undefined;
  /** Which records settled after the cut are the account's (account-rebuild.lua). */
  readonly match: {
    readonly field: '' | 'app_connection_id' | 'product_user_id';
    readonly value: string;
    readonly from: Date | null;
    readonly to: Date | null;
  };
  /** The account's amount from the ledger snapshot and the records it does not have. */
  amount(snapshot: DbClient, unwritten: readonly UsageRecord[]): Promise<bigint>;
}

export interface RebuildParts {
  readonly db: DbPool;
  readonly keys: RedisKeys;
  readonly scripts: Pick<RedisScripts, 'accountRebuild'>;
  readonly unwritten: UnwrittenUsage;
}

/** Installs `target` unless it is in Redis already (then leaves it untouched). */
export async function rebuildAccount(parts: RebuildParts, target: RebuildTarget): Promise<void> {
  const { db, keys, scripts, unwritten } = parts;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    const deletedBefore = await unwritten.deletions(target.orgId);
    const measured = await readOnlySnapshot(db, async (snapshot) => {
      const cut = await unwritten.cut(target.orgId, unwritten.mark());
      if (cut.deletions !== deletedBefore) return undefined;
      const records = await unwritten.unwrittenAt(snapshot, target.orgId, cut, target.mentioning);
      return { cut, amount: await target.amount(snapshot, records) };
    });
    if (measured) {
      const outcome = (await scripts.accountRebuild(
        {
          account: target.key,
          expiries: keys.holdExpiries(target.key),
          usage_stream: keys.usageStream(target.orgId),
        },
        {
          field: target.field,
          amount_nano: measured.amount.toString(),
          expire_at_ms: target.expireAtMs === null ? '' : String(target.expireAtMs),
          cut_last_id: measured.cut.lastId,
          cut_added: String(measured.cut.added),
          match_field: target.match.field,
          match_value: target.match.value,
          from: target.match.from?.toISOString() ?? '',
          to: target.match.to?.toISOString() ?? '',
          generation: randomBytes(8).toString('hex'),
        },
      )) as [number, string?];
      if (outcome[0] !== -1) return;
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS * (attempt + 1)));
  }
  throw new AccountRebuildBusyError(
    `account ${target.key} not rebuilt: the usage writer removed records from the org's stream during each of ${MAX_ATTEMPTS} measurements`,
  );
}
