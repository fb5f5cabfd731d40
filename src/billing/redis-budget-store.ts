// BudgetStore on Redis Lua: reserve.lua and settle.lua, one round trip each.
import { gwError } from '../errors.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import { usageRecordToFields } from '../ledger/usage-record.js';
import { formatNano } from '../money.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { Redis } from 'ioredis';
import type { BudgetStore, ReserveOutcome, ReserveRequest } from './budget-store.js';
import type { WalletService } from './wallets.js';

/** Status codes returned by reserve.lua (mirrors its header). */
export enum ReserveCode {
  Held = 0,
  WalletNotLoaded = 1,
  InsufficientBalance = 2,
}

/** Status codes returned by settle.lua. */
export enum SettleCode {
  Settled = 0,
  AlreadySettled = 1,
}

const SETTLED_MARKER_TTL_S = 7 * 24 * 3600;

export class RedisBudgetStore implements BudgetStore {
  /** Orgs whose usage stream is known to be in the writers' registry. */
  private readonly registeredStreams = new Set<string>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly scripts: RedisScripts,
    private readonly wallets: WalletService,
    private readonly reservationTtlMs: number,
  ) {}

  async reserve(request: ReserveRequest): Promise<ReserveOutcome> {
    const keys = [this.keys.wallet(request.orgId), this.keys.walletReservations(request.orgId)];
    const call = (): Promise<unknown> => {
      const now = Date.now();
      return this.scripts.reserve(keys, [
        request.requestId,
        request.amountNano.toString(),
        now,
        now + this.reservationTtlMs,
        request.walletPays ? '1' : '0',
      ]);
    };
    let result = (await call()) as [ReserveCode, string?];
    if (result[0] === ReserveCode.WalletNotLoaded) {
      await this.wallets.loadIntoRedis(request.orgId);
      result = (await call()) as [ReserveCode, string?];
    }
    switch (result[0]) {
      case ReserveCode.Held:
        return { ok: true };
      case ReserveCode.InsufficientBalance:
        return {
          ok: false,
          error: gwError(
            'gw_reservation_insufficient_balance',
            `the organization wallet cannot reserve ${formatNano(request.amountNano)} for this request ` +
              `(available ${formatNano(BigInt(result[1] ?? '0'))})`,
          ),
        };
      default:
        throw new Error(`reserve.lua returned unexpected code ${String(result[0])}`);
    }
  }

  async settle(record: UsageRecord): Promise<'settled' | 'already_settled'> {
    await this.registerStream(record.orgId);
    const result = (await this.scripts.settle(
      [
        this.keys.wallet(record.orgId),
        this.keys.walletReservations(record.orgId),
        this.keys.settled(record.orgId, record.requestId),
        this.keys.usageStream(record.orgId),
      ],
      [
        record.requestId,
        record.walletCostNano.toString(),
        SETTLED_MARKER_TTL_S,
        ...usageRecordToFields(record),
      ],
    )) as [SettleCode, string?];
    return result[0] === SettleCode.Settled ? 'settled' : 'already_settled';
  }

  private async registerStream(orgId: string): Promise<void> {
    if (this.registeredStreams.has(orgId)) return;
    await this.redis.sadd(this.keys.usageStreamRegistry(), this.keys.usageStream(orgId));
    this.registeredStreams.add(orgId);
  }
}
