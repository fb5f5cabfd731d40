// Organization wallets: Postgres holds every transaction (the durable truth); Redis holds
// the live balance the reserve script checks. A wallet missing from Redis is rebuilt as
// sum(transactions) − sum(wallet_cost of recorded usage), the latter from the running totals.
import { recordAudit, type Actor } from '../audit/audit.js';
import type { RedisClient } from '../redis/connect.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import {
  assertAmountInRange,
  formatNano,
  formatNumeric,
  nanoToNumeric,
  numericToNano,
  SETTLEMENT_CURRENCY,
} from '../money.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import { AccountRebuilder } from './account-rebuild.js';
import { ledgerAmounts, ledgerBalanceNano } from './ledger-amounts.js';

/** Who changes a wallet, for its history and the audit log (a dashboard user, or 'cli'). */
/**
 * One entry of a wallet's history: a top-up, the difference a balance set made, or what
 * usage records pruned from the ledger had taken (`gw usage prune`).
 */
export interface WalletTransaction {
  id: string;
  kind: 'topup' | 'set' | 'usage_archived';
  /** Signed 12-digit decimal string. */
  amount: string;
  currency: string;
  created_by: string | null;
  created_at: string;
}

export interface WalletTransactionRow {
  id: string;
  kind: 'topup' | 'set' | 'usage_archived';
  amount: string;
  created_by: string | null;
  created_at: Date;
  cursor_us: string;
}

export const WALLET_TRANSACTION_COLUMNS = `id::text, kind, amount::text, created_by, created_at,
  (extract(epoch FROM created_at) * 1000000)::bigint::text AS cursor_us`;

export function walletTransactionView(row: WalletTransactionRow): WalletTransaction {
  return {
    id: row.id,
    kind: row.kind,
    amount: formatNumeric(row.amount),
    currency: SETTLEMENT_CURRENCY,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * Records a wallet transaction and, for a change someone made (not the gateway's own), audits
 * it in the same transaction.
 */
async function insertWalletTransaction(
  client: Pick<DbPool, 'query'>,
  orgId: string,
  kind: 'topup' | 'set',
  amountNano: bigint,
  actor: Actor | undefined,
  details: Readonly<Record<string, unknown>>,
): Promise<WalletTransactionRow> {
  const { rows } = await client.query<WalletTransactionRow>(
    `INSERT INTO wallet_transactions (org_id, kind, amount, created_by)
     VALUES ($1, $2, $3, $4) RETURNING ${WALLET_TRANSACTION_COLUMNS}`,
    [orgId, kind, nanoToNumeric(amountNano), actor?.userId ?? null],
  );
  const row = rows[0]!;
  if (actor) {
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: `wallet.${kind}`,
      objectType: 'wallet_transaction',
      objectId: row.id,
      details,
    });
  }
  return row;
}

/** What changes a wallet by hand: a top-up, or a balance set (the difference it made). */
export type WalletChangeKind = 'topup' | 'set';

/**
 * A top-up or balance set committed in the ledger whose Redis step then failed (`cause`): the
 * live wallet owes it, and its next read or change, a request it refused, or `gw reconcile`
 * applies it, once (decisions 521, 544). Never a reason to top up again (542); setting the
 * balance again is safe (it applies what is owed first, then records what is left: 557).
 * recordedChangeError (src/admin/wallet.ts) is what the CLI and the dashboard answer for it.
 */
export class WalletChangeOwedError extends Error {
  override readonly name = 'WalletChangeOwedError';
  constructor(
    readonly kind: WalletChangeKind,
    readonly transaction: WalletTransaction,
    options: { readonly cause: unknown },
  ) {
    super(
      `${kind === 'topup' ? 'top-up' : 'balance set'} ${transaction.id} committed; applying it to the live balance failed`,
      options,
    );
  }
}

export class WalletService {
  constructor(
    private readonly db: DbPool,
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly scripts: RedisScripts,
    /** Shared with the account loader, so concurrent rebuilds of an org read its stream once. */
    private readonly unwritten = new UnwrittenUsage(redis, db, keys),
    /** Shared with the account loader: one org's rebuilds share their measurements. */
    private readonly rebuilder = new AccountRebuilder({ db, keys, scripts, unwritten }),
  ) {}

  /** The balance according to Postgres alone (ledgerBalanceNano). */
  ledgerBalanceNano(orgId: string, client: DbPool | DbClient = this.db): Promise<bigint> {
    return ledgerBalanceNano(client, orgId);
  }

  /**
   * The balance to rebuild a wallet with: the ledger's, less what usage settled in Redis and
   * not written to Postgres yet has cost it.
   */
  private async rebuiltBalanceNano(orgId: string): Promise<bigint> {
    const unwritten = await this.unwritten.forOrg(orgId);
    return (await ledgerAmounts(this.db, orgId, [{ of: 'wallet' }], unwritten))[0]!;
  }

  /**
   * Installs the wallet in Redis from Postgres unless it is already there, counting what
   * settles while it is rebuilt (account-rebuild.ts).
   */
  async loadIntoRedis(orgId: string): Promise<void> {
    await this.rebuilder.rebuild({
      kind: 'wallet',
      orgId,
      key: this.keys.wallet(orgId),
      field: 'balance',
      expireAtMs: null,
      amount: { of: 'wallet' },
    });
  }

  /**
   * The live balance and what is held: read from Redis, and only when the wallet is not there
   * rebuilt from Postgres first (which sums the org's ledger: not on every read).
   */
  async liveBalance(orgId: string): Promise<{ balanceNano: bigint; reservedNano: bigint }> {
    // A top-up whose Redis step failed after its commit is added here (decision 521).
    await this.applyOwedChanges(orgId);
    const read = () => this.redis.hmget(this.keys.wallet(orgId), 'balance', 'reserved');
    let [balance, reserved] = await read();
    if (balance === null) {
      await this.loadIntoRedis(orgId);
      [balance, reserved] = await read();
    }
    return { balanceNano: BigInt(balance ?? '0'), reservedNano: BigInt(reserved ?? '0') };
  }

  /**
   * Puts the wallet in Redis before a change to it is recorded (decision 301). A rebuild
   * installs a wallet only where there is none, so from here on none can install a balance it
   * measured before the change's commit (which would lack the change) or after it (which the
   * change's own Redis write would count again): the change reaches the live balance through
   * that write, once. Only Redis losing the wallet in between defeats it (then `gw reconcile`).
   * Top-ups the wallet is still owed are added first (applyOwedChanges).
   */
  private async ensureLive(orgId: string): Promise<void> {
    await this.applyOwedChanges(orgId);
    if ((await this.redis.exists(this.keys.wallet(orgId))) === 0) await this.loadIntoRedis(orgId);
  }

  private topUpKeys(orgId: string): { wallet: string; pending: string } {
    return { wallet: this.keys.wallet(orgId), pending: this.keys.walletPendingTopUps(orgId) };
  }

  /**
   * Adds funds: the wallet is put in Redis (ensureLive), the top-up recorded in Postgres and,
   * before that commits, marked owed to the live wallet (wallet-topup-pending.lua: a Redis
   * that fails here fails the top-up, nothing recorded); after the commit it is added to the
   * live balance, which takes the mark off (wallet-topup-apply.lua). Should that step fail
   * (Redis lost after the commit: WalletChangeOwedError, with the transaction), the mark stays, and
   * the wallet's next read or change, or `gw reconcile`, adds it (decision 521); the
   * dashboard's retry with its Idempotency-Key does so and answers the top-up (542). The balance may not pass
   * MAX_AMOUNT_NANO (AmountRangeError, nothing recorded): the wallet row is locked while the
   * ledger is summed, so concurrent top-ups cannot pass it together.
   */
  async topUp(orgId: string, amountNano: bigint, actor?: Actor): Promise<WalletTransaction> {
    assertAmountInRange(amountNano, 'the top-up');
    await this.ensureLive(orgId);
    let marked = false;
    const transaction = await withTransaction(this.db, async (client) => {
      // Held until the commit or rollback: applyOwedChanges waits on it to tell a top-up
      // still committing from one that never did.
      await client.query('SELECT 1 FROM wallets WHERE org_id = $1 FOR UPDATE', [orgId]);
      const balance = await this.ledgerBalanceNano(orgId, client);
      assertAmountInRange(balance + amountNano, 'the wallet balance');
      const row = await insertWalletTransaction(client, orgId, 'topup', amountNano, actor, {
        amount: formatNano(amountNano),
      });
      // {0} only if Redis lost the wallet since ensureLive: its next rebuild counts the
      // top-up (or, measured before this commit, `gw reconcile --repair` restores it).
      const outcome = (await this.scripts.walletTopUpPending(this.topUpKeys(orgId), {
        transaction_id: row.id,
      })) as [number];
      marked = outcome[0] === 1;
      return walletTransactionView(row);
    });
    if (marked) await this.applyCommitted('topup', this.topUpKeys(orgId), transaction, amountNano);
    return transaction;
  }

  /**
   * A committed change's own Redis step: adds `amountNano` to the live wallet and takes its mark
   * off (wallet-topup-apply.lua). A failure leaves the mark for applyOwedChanges and rejects as
   * WalletChangeOwedError, with the transaction.
   */
  private async applyCommitted(
    kind: WalletChangeKind,
    keys: { wallet: string; pending: string },
    transaction: WalletTransaction,
    amountNano: bigint,
  ): Promise<void> {
    try {
      await this.scripts.walletTopUpApply(keys, {
        transaction_id: transaction.id,
        amount_nano: amountNano.toString(),
      });
    } catch (error) {
      throw new WalletChangeOwedError(kind, transaction, { cause: error });
    }
  }

  /**
   * Adds to the live balance the top-ups, and the balance sets' differences, marked owed to it
   * whose own Redis step did not run (decisions 521 and 544): one round trip (two HKEYS) when
   * there is none. A mark whose transaction is not in the ledger belongs to a change still
   * committing or one that never committed: its transaction held the wallet row's lock from
   * before it marked until its end, so once that lock is had the ledger says which; the apply
   * script forgets the mark of one that did not commit, and applies one that did only to the
   * wallet it was owed to (never to one rebuilt since). `locked`: a transaction that holds that
   * lock itself (a set measuring the balance), in which every mark without its row is of a
   * change that never committed. True when it changed the balance.
   */
  async applyOwedChanges(orgId: string, locked?: DbClient): Promise<boolean> {
    const owed = [
      { kind: 'topup', pending: this.keys.walletPendingTopUps(orgId) },
      { kind: 'set', pending: this.keys.walletPendingSets(orgId) },
    ] as const;
    const replies = (await this.redis
      .pipeline(owed.map(({ pending }) => ['hkeys', pending]))
      .exec()) as Array<[Error | null, string[]]>;
    let applied = false;
    for (const [index, { kind, pending }] of owed.entries()) {
      const [error, marks] = replies[index]!;
      if (error) throw error;
      if (marks.length === 0) continue;
      applied = (await this.applyMarks(orgId, kind, pending, marks, locked)) || applied;
    }
    return applied;
  }

  private async applyMarks(
    orgId: string,
    kind: 'topup' | 'set',
    pending: string,
    marks: readonly string[],
    locked: DbClient | undefined,
  ): Promise<boolean> {
    const ids = marks.filter((id) => /^\d{1,18}$/.test(id));
    const amounts = async (): Promise<Map<string, string>> => {
      const { rows } = await (locked ?? this.db).query<{ id: string; amount: string }>(
        `SELECT id::text, amount::text FROM wallet_transactions
          WHERE org_id = $1 AND kind = $3 AND id = ANY($2::bigint[])`,
        [orgId, ids, kind],
      );
      return new Map(rows.map((row) => [row.id, numericToNano(row.amount).toString()]));
    };
    let committed = await amounts();
    if (!locked && ids.some((id) => !committed.has(id))) {
      // Waits for a change holding the lock to end (a statement of its own: nothing is kept).
      await this.db.query('SELECT 1 FROM wallets WHERE org_id = $1 FOR UPDATE', [orgId]);
      committed = await amounts();
    }
    let applied = false;
    for (const id of marks) {
      const outcome = (await this.scripts.walletTopUpApply(
        { wallet: this.keys.wallet(orgId), pending },
        { transaction_id: id, amount_nano: committed.get(id) ?? '' },
      )) as [number, string?];
      applied ||= outcome[0] === 1;
    }
    return applied;
  }

  /**
   * Sets the balance to an exact amount, recording the difference it made, the way a top-up
   * is recorded (decision 544): the wallet is put in Redis (ensureLive); then, the wallet row
   * locked (no top-up or set commits meanwhile), what the live wallet is still owed is added,
   * the live balance read, the difference to the target recorded and, before the commit,
   * marked owed to the live wallet (a Redis that fails here fails the set, nothing recorded);
   * after the commit it is added to the live balance, which takes the mark off. Should that
   * step fail, the mark stays, and the wallet's next read or change, a request it refused, or
   * `gw reconcile` applies it, once (applyOwedChanges). The difference is added, not the
   * target set: what requests spent between the read and that step stays spent. Resolves with
   * the set's ledger row.
   */
  async setBalance(orgId: string, targetNano: bigint, actor?: Actor): Promise<WalletTransaction> {
    assertAmountInRange(targetNano, 'the wallet balance');
    await this.ensureLive(orgId);
    const keys = { wallet: this.keys.wallet(orgId), pending: this.keys.walletPendingSets(orgId) };
    let owed: { transaction: WalletTransaction; differenceNano: bigint } | undefined;
    const set = await withTransaction(this.db, async (client) => {
      // Held until the commit or rollback, as a top-up holds it (applyOwedChanges).
      await client.query('SELECT 1 FROM wallets WHERE org_id = $1 FOR UPDATE', [orgId]);
      // Every change committed before this one is in the balance it is measured against.
      await this.applyOwedChanges(orgId, client);
      const balance = await this.redis.hget(keys.wallet, 'balance');
      // Not live only if Redis lost the wallet since ensureLive: measured from the ledger then.
      const previous = balance !== null ? BigInt(balance) : await this.rebuiltBalanceNano(orgId);
      const differenceNano = targetNano - previous;
      const row = await insertWalletTransaction(client, orgId, 'set', differenceNano, actor, {
        balance: formatNano(targetNano),
      });
      // {0} only if Redis lost the wallet since it was read: its next rebuild counts the set.
      const outcome = (await this.scripts.walletTopUpPending(keys, {
        transaction_id: row.id,
      })) as [number];
      const transaction = walletTransactionView(row);
      if (outcome[0] === 1) owed = { transaction, differenceNano };
      // What the transaction commits, for a commit fence that names it (`gw wallet set
      // --idempotency-key`, decision 574).
      return transaction;
    });
    if (owed) await this.applyCommitted('set', keys, owed.transaction, owed.differenceNano);
    return set;
  }
}
