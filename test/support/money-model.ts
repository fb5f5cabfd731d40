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
  /** Those requests that have not settled yet: a revoked grant pays only them. */
  keptFor: Set<string>;
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
   * Per user, revoked grants some of whose requests ended without a settle (released,
   * lapsed): what they kept pays nobody, and goes once the last of those requests' holds
   * would have lapsed (a settle of the user after that time drops it).
   */
  readonly orphaned: string[][] = [[], []];

  /** A copy to ask what a request would have met before a batch ran. */
  clone(): MoneyModel {
    const copy = new MoneyModel();
    copy.walletNano = this.walletNano;
    for (const [account, amount] of this.spent) copy.spent.set(account, amount);
    copy.grants.push(
      ...this.grants.map((grant) => ({ ...grant, keptFor: new Set(grant.keptFor) })),
    );
    copy.draining.splice(0, 2, ...this.draining.map((ids) => [...ids]));
    copy.orphaned.splice(0, 2, ...this.orphaned.map((ids) => [...ids]));
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
   * what revoked grants kept for this request, when it was in flight at their revocation.
   * Returns the expected consumption.
   */
  settle(charge: {
    readonly requestId: string;
    readonly costNano: bigint;
    readonly walletCostNano: bigint;
    readonly connection: number;
    readonly user: number | null;
    readonly userPolicy: UserPolicy | null;
    readonly period: string;
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
        ).filter((grant) => grant.keptFor.has(charge.requestId));
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
      // What a revoked grant kept goes once spent, or once every request it was kept for has
      // settled.
      if (userPolicy.creditMode === 'enforce') {
        this.draining[user] = this.draining[user]!.filter((id) => {
          const grant = this.grants.find((candidate) => candidate.id === id)!;
          grant.keptFor.delete(charge.requestId);
          if (grant.keptFor.size > 0 && grant.keptNano > 0n) return true;
          grant.keptNano = 0n;
          return false;
        });
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
  revoke(grantId: string, held: { nano: bigint; requestIds: readonly string[] }): void {
    const grant = this.grants.find((candidate) => candidate.id === grantId)!;
    grant.revoked = true;
    grant.keptNano = min(grant.remainingNano, held.nano);
    if (grant.keptNano > 0n) {
      grant.keptFor = new Set(held.requestIds);
      this.draining[grant.user]!.push(grant.id);
    }
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
