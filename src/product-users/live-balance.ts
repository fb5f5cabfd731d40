// A product user's live numbers from Redis (loaded from Postgres first when missing): spend
// in the current period and the remaining amount of each credit grant in one currency.
import type { RedisClient } from '../redis/connect.js';
import type { AccountLoader } from '../billing/account-loader.js';
import type { UserAccount } from '../billing/budget-store.js';
import { SETTLEMENT_CURRENCY } from '../money.js';
import type { RedisKeys } from '../redis/keys.js';

export interface LiveUserBalance {
  readonly spentThisPeriodNano: bigint;
  /** Remaining nano-units by grant id (expired grants included; callers filter by expiry). */
  readonly grantRemainingNano: ReadonlyMap<string, bigint>;
}

export class LiveBalanceReader {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly loader: AccountLoader,
  ) {}

  async read(orgId: string, user: UserAccount, currency: string): Promise<LiveUserBalance> {
    const spendKey = this.keys.userSpend(orgId, user.productUserId, user.period.key);
    const creditsKey = this.keys.userCredits(orgId, user.productUserId, currency);
    const [spendExists, creditsLoaded] = await Promise.all([
      this.redis.exists(spendKey),
      this.redis.hexists(creditsKey, 'loaded'),
    ]);
    // Loading the user's account loads its credits in the settlement currency too.
    const userLoad = spendExists === 0 || (creditsLoaded === 0 && currency === SETTLEMENT_CURRENCY);
    if (userLoad) {
      await this.loader.load(['user'], {
        orgId,
        appConnectionId: '',
        orgCap: null,
        connectionCap: null,
        user,
        walletPays: false,
        credentials: null,
      });
    }
    if (creditsLoaded === 0 && currency !== SETTLEMENT_CURRENCY) {
      await this.loader.loadCredits(orgId, user.productUserId, currency);
    }
    const [spent, credits] = await Promise.all([
      this.redis.hget(spendKey, 'spent'),
      this.redis.hgetall(creditsKey),
    ]);
    const grantRemainingNano = new Map<string, bigint>();
    for (const [field, value] of Object.entries(credits)) {
      if (field.startsWith('g:')) grantRemainingNano.set(field.slice(2), BigInt(value));
    }
    return { spentThisPeriodNano: BigInt(spent ?? '0'), grantRemainingNano };
  }
}
