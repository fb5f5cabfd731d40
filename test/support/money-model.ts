// A reference model of the money layer, written from SPEC.md's formulas and docs/charging.md,
// not from the scripts: the randomized test (test/money-model.race.test.ts) replays what the
// real Redis scripts did, in the order Redis ran it, and checks every counter against this.
// Every amount is an exact bigint of nano-units.
import type { CreditMode, OverrunPolicy } from '../../src/billing/modes.js';

export interface UserPolicy {
  /** null: no cap (unlimited base allowance). */
  readonly capNano: bigint | null;
  readonly creditMode: CreditMode;
  readonly overrunPolicy: OverrunPolicy;
}

export interface ModelGrant {
  readonly id: string;
  readonly user: number;
  /** Ordering key of "earliest-expiring grant first" (NEVER_EXPIRES_MS for none). */
  readonly expiresAtMs: number;
  readonly amountNano: bigint;
  remainingNano: bigint;
  consumedNano: bigint;
  revoked: boolean;
  /** What a revoked grant keeps for the requests in flight when it was revoked. */
  keptNano: bigint;
  /** Which revocation of the run revoked it (0: not revoked). */
  revokedAs: number;
}

/** What a request's reserve was checked against: the settings in force at its admission. */
export interface AdmissionSettings {
  readonly orgCapNano: bigint | null;
  readonly connectionCapNano: bigint | null;
  readonly user: UserPolicy | null;
}

export type Refusal =
  | { readonly kind: 'cap_exceeded'; readonly scope: 'org' | 'app_connection' }
  | { readonly kind: 'allowance_short'; readonly availableNano: bigint }
  | { readonly kind: 'wallet_short'; readonly availableNano: bigint };

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

export class MoneyModel {
  walletNano = 0n;
  /** Sell cost settled per account: `org:<period>`, `conn:<c>:<period>`, `user:<u>:<period>`. */
  private readonly spent = new Map<string, bigint>();
  readonly grants: ModelGrant[] = [];
  /** Per user, revoked grants keeping money for requests in flight, in revocation order. */
  readonly draining: string[][] = [[], []];
  /**
   * Per user, revoked grants whose requests in flight all ended without a settle (released,
   * lapsed): what they kept pays nobody, and goes with the next settle that finds the user
   * with nothing in flight (when that is depends on the order of concurrent requests).
   */
  readonly orphaned: string[][] = [[], []];
  /** Revocations so far: a request admitted after the n-th is never paid by its grant. */
  revocations = 0;

  /** A copy to ask what a request would have met before a batch ran. */
  clone(): MoneyModel {
    const copy = new MoneyModel();
    copy.walletNano = this.walletNano;
    for (const [account, amount] of this.spent) copy.spent.set(account, amount);
    copy.grants.push(...this.grants.map((grant) => ({ ...grant })));
    copy.draining.splice(0, 2, ...this.draining.map((ids) => [...ids]));
    copy.orphaned.splice(0, 2, ...this.orphaned.map((ids) => [...ids]));
    copy.revocations = this.revocations;
    return copy;
  }

  spentOf(account: string): bigint {
    return this.spent.get(account) ?? 0n;
  }

  accounts(): ReadonlyMap<string, bigint> {
    return this.spent;
  }

  /** The grants a user's request may draw on, earliest expiry first (ties: by id, as a zset). */
  liveGrants(user: number): ModelGrant[] {
    return this.grants
      .filter((grant) => grant.user === user && !grant.revoked && grant.remainingNano > 0n)
      .sort((a, b) => a.expiresAtMs - b.expiresAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  creditsOf(user: number): bigint {
    return this.liveGrants(user).reduce((sum, grant) => sum + grant.remainingNano, 0n);
  }

  /**
   * What a reserve of `amountNano` must answer when nothing else is in flight (SPEC "Limits"
   * 1-3; the order of the checks is org cap, connection cap, allowance, wallet).
   */
  refusal(
    settings: AdmissionSettings,
    account: { readonly connection: number; readonly user: number | null; readonly period: string },
    amountNano: bigint,
  ): Refusal | null {
    const { period } = account;
    if (
      settings.orgCapNano !== null &&
      this.spentOf(`org:${period}`) + amountNano > settings.orgCapNano
    ) {
      return { kind: 'cap_exceeded', scope: 'org' };
    }
    if (
      settings.connectionCapNano !== null &&
      this.spentOf(`conn:${account.connection}:${period}`) + amountNano > settings.connectionCapNano
    ) {
      return { kind: 'cap_exceeded', scope: 'app_connection' };
    }
    const user = settings.user;
    if (account.user !== null && user?.creditMode === 'enforce' && user.capNano !== null) {
      // remaining_base_allowance = max(0, cap_amount - spent_this_period);
      // available_allowance = remaining_base_allowance + available_credits
      const available =
        max(0n, user.capNano - this.spentOf(`user:${account.user}:${period}`)) +
        this.creditsOf(account.user);
      if (amountNano > available) return { kind: 'allowance_short', availableNano: available };
    }
    if (this.walletNano < amountNano) {
      return { kind: 'wallet_short', availableNano: max(this.walletNano, 0n) };
    }
    return null;
  }

  /**
   * A settled charge, in the order Redis ran it: the sell cost counts against every cap
   * account and the user's period; the wallet pays `walletCostNano`. When the user has a cap
   * and credits are not disabled, credits pay what the base allowance cannot
   * (max(0, cost - max(0, cap - spent before))), earliest-expiring live grant first, then
   * what revoked grants kept for requests in flight. Returns the expected consumption.
   */
  settle(charge: {
    readonly costNano: bigint;
    readonly walletCostNano: bigint;
    readonly connection: number;
    readonly user: number | null;
    readonly userPolicy: UserPolicy | null;
    readonly period: string;
    /** The user's holds still in flight after this one settles (for revoked grants). */
    readonly userHoldsLeftNano: bigint;
    /** The revocations made before the request was admitted (MoneyModel.revocations). */
    readonly revocationsBefore: number;
  }): { creditsNano: bigint; consumption: Array<{ grantId: string; amountNano: bigint }> } {
    const { costNano, period, user, userPolicy } = charge;
    const consumption: Array<{ grantId: string; amountNano: bigint }> = [];
    let creditsNano = 0n;
    if (user !== null && userPolicy && userPolicy.capNano !== null) {
      const userAccount = `user:${user}:${period}`;
      if (userPolicy.creditMode !== 'disabled') {
        let needed = max(0n, costNano - max(0n, userPolicy.capNano - this.spentOf(userAccount)));
        // A revoked grant pays only the requests in flight when it was revoked, which it kept
        // money for: those holding on the user's allowance (enforce).
        const draining = this.draining[user]!.map((id) =>
          this.grants.find((grant) => grant.id === id)!,
        ).filter(
          (grant) =>
            userPolicy.creditMode === 'enforce' && grant.revokedAs > charge.revocationsBefore,
        );
        for (const grant of [...this.liveGrants(user), ...draining]) {
          if (needed <= 0n) break;
          const available = grant.revoked ? grant.keptNano : grant.remainingNano;
          const take = min(available, needed);
          if (take <= 0n) continue;
          if (grant.revoked) grant.keptNano -= take;
          grant.remainingNano -= take;
          grant.consumedNano += take;
          creditsNano += take;
          needed -= take;
          consumption.push({ grantId: grant.id, amountNano: take });
        }
      }
      // Once the user has nothing in flight, what revoked grants kept is gone.
      if (userPolicy.creditMode === 'enforce' && charge.userHoldsLeftNano === 0n) {
        for (const id of this.draining[user]!) {
          this.grants.find((grant) => grant.id === id)!.keptNano = 0n;
        }
        this.draining[user] = [];
      }
    }
    this.add(`org:${period}`, costNano);
    this.add(`conn:${charge.connection}:${period}`, costNano);
    if (user !== null) this.add(`user:${user}:${period}`, costNano);
    this.walletNano -= charge.walletCostNano;
    return { creditsNano, consumption };
  }

  /** A revocation: the rest of the grant can no longer be spent, but up to what the user's
   * requests in flight hold stays for them (docs/charging.md, "Credits revoked in flight"). */
  revoke(grantId: string, userHeldNano: bigint): void {
    const grant = this.grants.find((candidate) => candidate.id === grantId)!;
    this.revocations += 1;
    grant.revoked = true;
    grant.revokedAs = this.revocations;
    grant.keptNano = min(grant.remainingNano, userHeldNano);
    if (grant.keptNano > 0n) this.draining[grant.user]!.push(grant.id);
  }

  /** After a batch: what revoked grants still keep pays nobody any more (orphaned). */
  orphanDraining(): void {
    for (const user of [0, 1]) {
      this.orphaned[user]!.push(...this.draining[user]!);
      this.draining[user] = [];
    }
  }

  /** Redis lost the user's credits (rebuilt from the ledger): nothing is kept any more. */
  forgetKept(): void {
    for (const grant of this.grants) grant.keptNano = 0n;
    this.draining.splice(0, 2, [], []);
    this.orphaned.splice(0, 2, [], []);
  }

  private add(account: string, amountNano: bigint): void {
    if (amountNano === 0n && !this.spent.has(account)) {
      this.spent.set(account, 0n);
      return;
    }
    this.spent.set(account, this.spentOf(account) + amountNano);
  }
}
