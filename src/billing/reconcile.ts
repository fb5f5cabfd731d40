// gw reconcile: compares every live account in Redis (wallet balances; the spend of org caps,
// connection caps and product users per period) with what the Postgres ledger says it should
// be, the way an account is rebuilt (docs/operations.md): the ledger plus the usage settled in
// Redis and not written yet. With repair, moves each drifted account by its drift.
//
// Exact while traffic runs. The ledger is read in one REPEATABLE READ snapshot taken first;
// then, in one MULTI (an org's keys share one slot), the live values and the org's usage
// stream. A record settled after the MULTI is in neither. A record committed to Postgres
// before the snapshot is in the ledger; one committed after it is still in the stream at the
// MULTI unless the writer deleted it in between: the stream's deletion count is read before
// the snapshot and in the MULTI, and a measurement where it moved is taken again. Likewise a
// top-up (or balance set) is committed, then added to the live wallet: one committed after the
// snapshot and added before the MULTI is in the live balance only, so the wallet's count of
// changes added (`applied`, wallet-topup-apply.lua) is read before the snapshot and in the
// MULTI, and a measurement where it moved is taken again (decision 563). A repair needs two
// measurements in a row that agree, and is a relative change (account-correct.lua), so
// settles landing meanwhile are kept.
import { readOnlySnapshot, type DbClient, type DbPool } from '../db/pool.js';
import { formatNano } from '../money.js';
import { monthlyPeriod } from '../periods.js';
import { scanKeys, type RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import { streamPosition, unwrittenAtSnapshot } from '../ledger/unwritten-usage.js';
import { ledgerAmounts, type LedgerAmount } from './ledger-amounts.js';

/** The live wallet's count of top-ups and balance sets added to it (wallet-topup-apply.lua). */
const WALLET_APPLIED_FIELD = 'applied';

/** Measurements tried per org before it is reported busy (settling all the time). */
const MAX_ATTEMPTS = 8;
const RETRY_PAUSE_MS = 25;

export type AccountKind = 'wallet' | 'org_cap' | 'connection_cap' | 'user_spend';

interface LiveAccount {
  readonly kind: AccountKind;
  readonly key: string;
  readonly field: 'balance' | 'spent';
  /** The cap's or user's period start (epoch ms), for period accounts. */
  readonly periodStart?: number;
  readonly appConnectionId?: string;
  readonly productUserId?: string;
}

export interface AccountDrift {
  readonly account: AccountKind;
  readonly app_connection_id?: string;
  readonly product_user_id?: string;
  readonly period_start?: string;
  /** What Redis holds. */
  readonly live: string;
  /** What the ledger (plus unwritten usage) says. */
  readonly ledger: string;
  /** live − ledger. */
  readonly drift: string;
  readonly repaired: boolean;
}

export interface OrgReconciliation {
  readonly org_id: string;
  /** busy: settles kept landing during every measurement; nothing was compared. */
  readonly status: 'consistent' | 'drift' | 'repaired' | 'busy';
  readonly accounts_checked: number;
  readonly drifts: AccountDrift[];
}

interface Measurement {
  /**
   * key → what Redis held and what it should hold, for every account compared, with the
   * install it was measured on (its `gen`: account-rebuild.lua; '' for one without).
   */
  readonly drifts: Map<string, { live: bigint; expected: bigint; generation: string }>;
  /**
   * Top-ups and balance sets (decision 544) marked owed to the live wallet (wallet-topup-pending.lua): committed, or about to
   * be, and not yet added. Their amounts are missing from the live balance and will be added
   * by their own step or whoever finds the mark, so the wallet's drift is not repaired while
   * there is one (that would count them twice; decision 521).
   */
  readonly pendingTopUps: number;
}

export class Reconciler {
  constructor(
    private readonly db: DbPool,
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly scripts: Pick<RedisScripts, 'accountCorrect'>,
    /**
     * Adds the top-ups an org's live wallet is still owed (WalletService.applyOwedChanges),
     * run before the org is measured.
     */
    private readonly applyOwedChanges?: (orgId: string) => Promise<unknown>,
  ) {}

  /** Every org with a live account in Redis, or just `orgId`. */
  async run(options: { orgId?: string; repair: boolean }): Promise<OrgReconciliation[]> {
    const byOrg = await this.liveAccounts(options.orgId);
    const results: OrgReconciliation[] = [];
    for (const [orgId, accounts] of [...byOrg].sort(([a], [b]) => a.localeCompare(b))) {
      results.push(await this.reconcileOrg(orgId, await this.inUse(accounts), options.repair));
    }
    return results;
  }

  /**
   * The accounts a request can still charge. A product user's spend account whose period is
   * not one of the user's periods under the current anchor (`allowance_starts_at` changed
   * since) is left alone: nothing charges it any more, and the ledger's spend over its period
   * goes on growing with what the user spends under the new anchor, so it has no value to
   * compare with; it goes at its period's end. Should the anchor come back to it, the
   * anchor change drops it first, and it is rebuilt from the ledger (management.ts).
   */
  private async inUse(accounts: readonly LiveAccount[]): Promise<LiveAccount[]> {
    const users = accounts.flatMap((account) =>
      account.kind === 'user_spend' ? [account.productUserId!] : [],
    );
    if (users.length === 0) return [...accounts];
    const anchors = await userAnchors(this.db, users);
    return accounts.filter(
      (account) =>
        account.kind !== 'user_spend' ||
        monthlyPeriod(
          new Date(account.periodStart!),
          anchors.get(account.productUserId!) ?? null,
        ).start.getTime() === account.periodStart,
    );
  }

  private async reconcileOrg(
    orgId: string,
    accounts: readonly LiveAccount[],
    repair: boolean,
  ): Promise<OrgReconciliation> {
    await this.applyOwedChanges?.(orgId);
    const first = await this.stableMeasurement(orgId, accounts);
    if (!first) {
      return { org_id: orgId, status: 'busy', accounts_checked: 0, drifts: [] };
    }
    const drifted = accounts.filter((account) => driftOf(first, account) !== 0n);
    let repairable = new Set<string>();
    if (repair && drifted.length > 0) {
      // Only a drift seen twice in a row, unchanged, on the same install, is corrected.
      const second = await this.stableMeasurement(orgId, accounts);
      if (second) {
        repairable = new Set(
          drifted
            .filter(
              (account) =>
                (account.kind !== 'wallet' ||
                  (first.pendingTopUps === 0 && second.pendingTopUps === 0)) &&
                driftOf(second, account) === driftOf(first, account) &&
                second.drifts.get(account.key)!.generation ===
                  first.drifts.get(account.key)!.generation,
            )
            .map((account) => account.key),
        );
      }
    }
    const drifts: AccountDrift[] = [];
    for (const account of drifted) {
      const { live, expected, generation } = first.drifts.get(account.key)!;
      let repaired = false;
      if (repairable.has(account.key)) {
        // Only the install both measurements saw: one rebuilt since counted the ledger afresh.
        const outcome = (await this.scripts.accountCorrect(
          { account: account.key },
          {
            field: account.field,
            delta_nano: (expected - live).toString(),
            generation,
          },
        )) as [number, string?];
        repaired = outcome[0] === 1;
      }
      drifts.push({
        account: account.kind,
        ...(account.appConnectionId && { app_connection_id: account.appConnectionId }),
        ...(account.productUserId && { product_user_id: account.productUserId }),
        ...(account.periodStart !== undefined && {
          period_start: new Date(account.periodStart).toISOString(),
        }),
        live: formatNano(live),
        ledger: formatNano(expected),
        drift: formatNano(live - expected),
        repaired,
      });
    }
    const status =
      drifts.length === 0
        ? 'consistent'
        : drifts.every((drift) => drift.repaired)
          ? 'repaired'
          : 'drift';
    return { org_id: orgId, status, accounts_checked: accounts.length, drifts };
  }

  /** One measurement during which no settle landed, or undefined after MAX_ATTEMPTS. */
  private async stableMeasurement(
    orgId: string,
    accounts: readonly LiveAccount[],
  ): Promise<Measurement | undefined> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const measurement = await this.measure(orgId, accounts);
      if (measurement) return measurement;
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS * (attempt + 1)));
    }
    return undefined;
  }

  private async measure(
    orgId: string,
    accounts: readonly LiveAccount[],
  ): Promise<Measurement | undefined> {
    const stream = this.keys.usageStream(orgId);
    const wallet = accounts.find((account) => account.kind === 'wallet')?.key;
    // Read with a connection in hand, so that no wait for the pool falls between it and the
    // MULTI (a longer window, more measurements taken again).
    let deletedBefore = Number.NaN;
    let appliedBefore: string | null = null;
    const readBeforeSnapshot = async (): Promise<void> => {
      deletedBefore = streamDeletions(
        await this.redis.xinfo('STREAM', stream).then(
          (info) => [null, info] as [null, unknown],
          (error: Error) => [error, undefined] as [Error, undefined],
        ),
      );
      if (wallet) appliedBefore = await this.redis.hget(wallet, WALLET_APPLIED_FIELD);
    };
    return readOnlySnapshot(
      this.db,
      async (client) => {
        const transaction = this.redis.multi();
        for (const account of accounts) transaction.hmget(account.key, account.field, 'gen');
        transaction.xinfo('STREAM', stream);
        transaction.xrange(stream, '-', '+');
        transaction.hlen(this.keys.walletPendingTopUps(orgId));
        transaction.hlen(this.keys.walletPendingSets(orgId));
        if (wallet) transaction.hget(wallet, WALLET_APPLIED_FIELD);
        const replies = (await transaction.exec()) ?? [];
        // The writer removed records from the stream between the snapshot and the MULTI: one of
        // them may be in neither. Measure again.
        if (streamDeletions(replies[accounts.length]!) !== deletedBefore) return undefined;
        // A top-up or set was added to the live wallet meanwhile: it may have committed after
        // the snapshot, in the live balance and not in the ledger. Measure again.
        if (wallet && (replies[accounts.length + 4]![1] ?? null) !== appliedBefore) {
          return undefined;
        }
        const stored = accounts.map((_a, index) => replies[index]![1] as Array<string | null>);
        const entries = (replies[accounts.length + 1]![1] ?? []) as Array<[string, string[]]>;
        const expected = await this.expectedValues(
          client,
          orgId,
          accounts,
          entries.map(([, fields]) => fields),
        );
        const drifts = new Map<string, { live: bigint; expected: bigint; generation: string }>();
        accounts.forEach((account, index) => {
          const [value, generation] = stored[index] ?? [];
          drifts.set(account.key, {
            live: BigInt(value ?? '0'),
            expected: expected[index]!,
            generation: generation ?? '',
          });
        });
        const marks = (index: number): number => Number(replies[accounts.length + index]![1] ?? 0);
        // A balance set's marks as a top-up's (decision 544).
        return { drifts, pendingTopUps: marks(2) + marks(3) };
      },
      readBeforeSnapshot,
    );
  }

  /** What each account should hold, from one ledger snapshot and the stream's records. */
  private async expectedValues(
    client: DbClient,
    orgId: string,
    accounts: readonly LiveAccount[],
    streamEntries: readonly string[][],
  ): Promise<bigint[]> {
    const unwritten = await unwrittenAtSnapshot(client, orgId, streamEntries);
    const anchors = await userAnchors(
      client,
      accounts.flatMap((account) => (account.productUserId ? [account.productUserId] : [])),
    );
    const amounts = accounts.map((account): LedgerAmount => {
      if (account.kind === 'wallet') return { of: 'wallet' };
      const [column, id] =
        account.kind === 'org_cap'
          ? (['org_id', orgId] as const)
          : account.kind === 'connection_cap'
            ? (['app_connection_id', account.appConnectionId!] as const)
            : (['product_user_id', account.productUserId!] as const);
      const start = new Date(account.periodStart!);
      const anchor = account.productUserId ? (anchors.get(account.productUserId) ?? null) : null;
      return { of: 'spent', column, id, period: { start, end: monthlyPeriod(start, anchor).end } };
    });
    return ledgerAmounts(client, orgId, amounts, unwritten);
  }

  /** The live accounts in Redis, by org (SCAN; on a cluster, over every master). */
  private async liveAccounts(onlyOrgId?: string): Promise<Map<string, LiveAccount[]>> {
    const probe = this.keys.wallet('ORG');
    const prefix = probe.slice(0, probe.indexOf('{o:ORG}'));
    const pattern = `${prefix}{o:${onlyOrgId ? escapeGlob(onlyOrgId) : '*'}}:*`;
    const byOrg = new Map<string, LiveAccount[]>();
    await scanKeys(this.redis, pattern, (keys) => {
      for (const key of keys) {
        const parsed = parseAccountKey(key.slice(prefix.length));
        if (!parsed) continue;
        const list = byOrg.get(parsed.orgId) ?? [];
        list.push({ ...parsed.account, key });
        byOrg.set(parsed.orgId, list);
      }
      return Promise.resolve();
    });
    return byOrg;
  }
}

function driftOf(measurement: Measurement, account: LiveAccount): bigint {
  const { live, expected } = measurement.drifts.get(account.key)!;
  return live - expected;
}

/** `{o:<org>}:<rest>` → the account it names, or undefined for any other key of the org. */
function parseAccountKey(
  rest: string,
): { orgId: string; account: Omit<LiveAccount, 'key'> } | undefined {
  const match = /^\{o:([^}]+)\}:(.+)$/.exec(rest);
  if (!match) return undefined;
  const [, orgId, name] = match as unknown as [string, string, string];
  if (name === 'wallet') return { orgId, account: { kind: 'wallet', field: 'balance' } };
  for (const { pattern, kind, owner } of PERIOD_ACCOUNT_KEYS) {
    const parts = pattern.exec(name);
    if (!parts) continue;
    // The last group is the period start; an owner id, where there is one, comes before it.
    const periodStart = Number(parts[parts.length - 1]);
    const account = { kind, field: 'spent', periodStart } as const;
    return { orgId, account: owner ? { ...account, [owner]: parts[1]! } : account };
  }
  return undefined;
}

/** The spend accounts of a period, by their key's name within the org (src/redis/keys.ts). */
const PERIOD_ACCOUNT_KEYS: readonly {
  readonly pattern: RegExp;
  readonly kind: AccountKind;
  readonly owner?: 'appConnectionId' | 'productUserId';
}[] = [
  { pattern: /^cap:org:(\d+)$/, kind: 'org_cap' },
  { pattern: /^cap:conn:([^:]+):(\d+)$/, kind: 'connection_cap', owner: 'appConnectionId' },
  { pattern: /^pu:([^:]+):spend:(\d+)$/, kind: 'user_spend', owner: 'productUserId' },
];

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}

/**
 * How many entries the stream has lost (XINFO STREAM: entries-added − length), from a MULTI
 * reply: the writer deletes each record once it is in Postgres. -1 when there is no stream.
 */
function streamDeletions(reply: [Error | null, unknown]): number {
  const [error, info] = reply;
  if (error || !Array.isArray(info)) return -1;
  return streamPosition(info).deletions;
}

async function userAnchors(
  client: Pick<DbPool, 'query'>,
  productUserIds: readonly string[],
): Promise<Map<string, Date | null>> {
  if (productUserIds.length === 0) return new Map();
  const { rows } = await client.query<{ id: string; allowance_starts_at: Date | null }>(
    'SELECT id, allowance_starts_at FROM product_users WHERE id = ANY($1)',
    [productUserIds],
  );
  return new Map(rows.map((row) => [row.id, row.allowance_starts_at]));
}
