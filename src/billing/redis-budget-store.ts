// BudgetStore on Redis Lua: reserve.lua and settle.lua, one round trip each (plus a load
// from Postgres the first time an account is used in a period).
import type { Redis } from 'ioredis';
import type { UsageRecord } from '../ledger/usage-record.js';
import { usageRecordToFields } from '../ledger/usage-record.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { AccountLoader, AccountName } from './account-loader.js';
import type {
  BudgetStore,
  CredentialChoice,
  FailoverOutcome,
  FailoverRequest,
  RequestAccounts,
  ReserveOutcome,
  ReserveRequest,
} from './budget-store.js';

const credentialTiers = (choice: CredentialChoice | null): string =>
  choice ? choice.tiers.map((tier) => tier.join(',')).join('|') : '';

/** Status codes returned by reserve.lua (mirrors its header). */
export enum ReserveCode {
  Held = 0,
  NotLoaded = 1,
  WalletShort = 2,
  CapExceeded = 3,
  AllowanceShort = 4,
  NoCredential = 5,
}

/** Status codes returned by settle.lua. */
export enum SettleCode {
  Settled = 0,
  AlreadySettled = 1,
}

/** Settle retries come within milliseconds; the marker outlives them by far, without costing
 * Redis one key per request for days. */
const SETTLED_MARKER_TTL_S = 300;
const STREAM_REGISTRATION_REFRESH_MS = 60_000;
/** Placeholder key for an account a request does not use (same slot, never written). */
const UNUSED = 'unused';

export class RedisBudgetStore implements BudgetStore {
  /** When each org's usage stream was last announced to the writers' registry. */
  private readonly streamRegisteredAtMs = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly scripts: RedisScripts,
    private readonly loader: AccountLoader,
    private readonly reservationTtlMs: number,
  ) {
    // After a reconnect Redis may be a new, empty one: announce every stream again.
    redis.on('ready', () => this.streamRegisteredAtMs.clear());
  }

  async reserve(request: ReserveRequest): Promise<ReserveOutcome> {
    const { accounts } = request;
    const keys = [
      ...this.accountKeys(accounts),
      this.keys.credentialCooldowns(accounts.orgId),
      this.keys.credentialRotation(accounts.orgId),
    ];
    const call = async (): Promise<Array<string | number>> => {
      const now = Date.now();
      return (await this.scripts.reserve(keys, [
        request.requestId,
        request.amountNano.toString(),
        now,
        now + this.reservationTtlMs,
        accounts.walletPays ? '1' : '0',
        accounts.orgCap?.capNano.toString() ?? '',
        accounts.connectionCap?.capNano.toString() ?? '',
        accounts.user?.capNano?.toString() ?? '',
        accounts.user?.creditMode ?? 'none',
        credentialTiers(accounts.credentials),
        accounts.credentials?.byokOnly ? '1' : '0',
      ])) as Array<string | number>;
    };
    let result = await call();
    if (result[0] === ReserveCode.NotLoaded) {
      await this.loader.load(result.slice(1) as AccountName[], accounts);
      result = await call();
    }
    const amount = (index: number): bigint => BigInt(result[index] ?? '0');
    switch (result[0]) {
      case ReserveCode.Held:
        return { kind: 'held', credentialId: result[1] ? String(result[1]) : null };
      case ReserveCode.NoCredential:
        return { kind: 'no_credential' };
      case ReserveCode.WalletShort:
        return { kind: 'wallet_short', availableNano: amount(1) };
      case ReserveCode.CapExceeded:
        return {
          kind: 'cap_exceeded',
          scope: result[1] === 'org' ? 'org' : 'app_connection',
          capNano: amount(2),
          spentNano: amount(3),
          reservedNano: amount(4),
        };
      case ReserveCode.AllowanceShort:
        return {
          kind: 'allowance_short',
          capNano: amount(1),
          spentNano: amount(2),
          baseRemainingNano: amount(3),
          creditsNano: amount(4),
          availableNano: amount(5),
        };
      default:
        throw new Error(`reserve.lua returned unexpected code ${String(result[0])}`);
    }
  }

  async failover(request: FailoverRequest): Promise<FailoverOutcome> {
    const { accounts } = request;
    const keys = [
      this.keys.wallet(accounts.orgId),
      this.keys.holdExpiries(this.keys.wallet(accounts.orgId)),
      this.keys.credentialCooldowns(accounts.orgId),
      this.keys.credentialRotation(accounts.orgId),
    ];
    const call = async (): Promise<Array<string | number>> => {
      const now = Date.now();
      return (await this.scripts.failover(keys, [
        request.requestId,
        request.failedCredentialId,
        request.cooldownUntilMs,
        credentialTiers(accounts.credentials),
        accounts.credentials?.byokOnly ? '1' : '0',
        request.amountNano.toString(),
        now,
        now + this.reservationTtlMs,
      ])) as Array<string | number>;
    };
    let result = await call();
    if (result[0] === ReserveCode.NotLoaded) {
      await this.loader.load(['wallet'], accounts);
      result = await call();
    }
    switch (result[0]) {
      case ReserveCode.Held:
        return result[1]
          ? { kind: 'credential', credentialId: String(result[1]) }
          : { kind: 'system' };
      case ReserveCode.WalletShort:
        return { kind: 'wallet_short', availableNano: BigInt(result[1] ?? '0') };
      case ReserveCode.NoCredential:
        return { kind: 'no_credential' };
      default:
        throw new Error(`failover.lua returned unexpected code ${String(result[0])}`);
    }
  }

  async settle(
    record: UsageRecord,
    accounts: RequestAccounts,
  ): Promise<'settled' | 'already_settled'> {
    await this.registerStream(record.orgId);
    const result = (await this.scripts.settle(
      [
        ...this.accountKeys(accounts),
        this.keys.settled(record.orgId, record.requestId),
        this.keys.usageStream(record.orgId),
      ],
      [
        record.requestId,
        record.sellCostNano.toString(),
        record.walletCostNano.toString(),
        record.reservedNano.toString(),
        SETTLED_MARKER_TTL_S,
        Date.now(),
        accounts.user?.capNano?.toString() ?? '',
        accounts.user?.creditMode ?? 'none',
        accounts.orgCap ? '1' : '0',
        accounts.connectionCap ? '1' : '0',
        ...usageRecordToFields(record),
      ],
    )) as [SettleCode, string?, string?];
    return result[0] === SettleCode.Settled ? 'settled' : 'already_settled';
  }

  /** KEYS[1..10] of reserve.lua and settle.lua, in their order. */
  private accountKeys(accounts: RequestAccounts): string[] {
    const { orgId } = accounts;
    const withExpiries = (key: string): [string, string] => [key, this.keys.holdExpiries(key)];
    const unused = this.keys.orgCap(orgId, UNUSED);
    const user = accounts.user;
    return [
      ...withExpiries(this.keys.wallet(orgId)),
      ...withExpiries(
        accounts.orgCap ? this.keys.orgCap(orgId, accounts.orgCap.period.key) : unused,
      ),
      ...withExpiries(
        accounts.connectionCap
          ? this.keys.connectionCap(
              orgId,
              accounts.appConnectionId,
              accounts.connectionCap.period.key,
            )
          : unused,
      ),
      ...withExpiries(
        user ? this.keys.userSpend(orgId, user.productUserId, user.period.key) : unused,
      ),
      user ? this.keys.userCredits(orgId, user.productUserId) : unused,
      user ? this.keys.userGrants(orgId, user.productUserId) : unused,
    ];
  }

  /**
   * Makes sure the writers know the org's stream. Re-announced every minute, not once per
   * process: a Redis that restarted empty has lost the registry, and the records that settle
   * after it must still reach Postgres.
   */
  private async registerStream(orgId: string): Promise<void> {
    const now = Date.now();
    if ((this.streamRegisteredAtMs.get(orgId) ?? 0) > now - STREAM_REGISTRATION_REFRESH_MS) return;
    await this.redis.sadd(this.keys.usageStreamRegistry(), this.keys.usageStream(orgId));
    this.streamRegisteredAtMs.set(orgId, now);
  }
}
