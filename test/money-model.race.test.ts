// The money layer against a reference model, randomized (fast-check): one org with two app
// connections, two product users and an org wallet, driven through the money layer the gateway
// builds (createMoneyLayer: reserve.lua, settle.lua, release.lua, the account loader and the
// wallet service; credit grants through ProductUserManagement) on the real Redis and Postgres.
// Requests run concurrently (reserve, the limit_output retry, then settle at a cost below, at or
// above the hold, zero, a release, or an abandon whose hold lapses), between cap changes of each
// level and each credit mode and overrun policy, grants and revocations (also while requests are
// in flight), wallet top-ups and sets, a month rollover (also while requests are in flight: they
// settle after it), account rebuilds from the ledger and usage-writer drains. After every step the model (test/support/money-model.ts, from SPEC.md's
// formulas) replays what settled, in the order Redis ran it (the usage stream's order), and:
// - every counter in Redis equals the model (wallet, caps, allowances, each grant): no spend is
//   lost or counted twice, every credit split is the spec's (base first, earliest grant first);
// - the requests admitted together under a cap, an enforced allowance or the wallet settled no
//   more than it had left when they started, plus what their actual costs exceeded their holds
//   by (the one overrun the spec allows: an estimate is not a bound on the vendor's count);
// - a request sent alone is refused exactly when the model says, with the model's available
//   amount (no spurious refusal either);
// - once every hold has settled, been released or lapsed, no account holds anything;
// - the ledger, once the usage writer drained, sums to the same figures, and an account (or a
//   user's credits) rebuilt from it, with or without a drain first, holds them too.
// A request counts in the month it was admitted in: its accounts are that month's and its record
// is dated at its admission, as src/inference/settlement.ts dates it (decision 402), so one
// admitted before the rollover and settled after it is in that month's accounts, ledger sums
// and rebuilds. A fixed seed and a few random ones; the seed is in the failure message.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import type { RequestAccounts, ReserveOutcome, UserAccount } from '../src/billing/budget-store.js';
import { NEVER_EXPIRES_MS } from '../src/billing/account-rebuild.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { invalidationPublisher } from '../src/cache/invalidation.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { usageRecordFromFields, type UsageRecord } from '../src/ledger/usage-record.js';
import { numericToNano } from '../src/money.js';
import { monthlyPeriod, type Period } from '../src/periods.js';
import { ProductUserManagement } from '../src/product-users/management.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { MoneyModel, type AdmissionSettings, type UserPolicy } from './support/money-model.js';
import {
  revocationScenario,
  scenario,
  type Chain,
  type MidOp,
  type Setting,
  type Step,
} from './support/money-scenarios.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('moneymodel');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 6);
const writerDb = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const layer = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
/** An instance whose requests are abandoned: its holds lapse almost at once. */
const HOLD_LAPSE_MS = 30;
const lapsing = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: HOLD_LAPSE_MS });
const management = new ProductUserManagement(
  db,
  redis,
  keys,
  scripts,
  invalidationPublisher(redis, keys.invalidationChannel()),
);
const writer = testUsageWriter(writerRedis, keys, writerDb, 'money-model', {
  claimIdleMs: 60_000,
});
/** The month the test runs in, and the next one (a record dated in it rolls the periods over). */
const PERIODS: readonly Period[] = (() => {
  const first = monthlyPeriod(new Date(), null);
  return [first, monthlyPeriod(new Date(first.end.getTime() + 86_400_000), null)];
})();
/** Abandoned holds per run: under the 20 lapsed holds a reserve sweeps from an account. */
const MAX_ABANDONED = 12;

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await Promise.all([db.end(), writerDb.end()]);
});

/** How often each path ran, over every run: the scenarios must keep reaching them. */
class Tally {
  private readonly counts = new Map<string, number>();

  count(what: string): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }

  of(what: string): number {
    return this.counts.get(what) ?? 0;
  }
}
const tally = new Tally();

// ---- one run -----------------------------------------------------------------------------------

/** A request as it went: its settings at admission, what it held and what it settled. */
interface Ran {
  readonly chain: Chain;
  readonly requestId: string;
  readonly settings: AdmissionSettings;
  readonly accounts: RequestAccounts;
  readonly outcomes: ReserveOutcome[];
  /** The month it was admitted in, and when: its accounts' period and its record's date. */
  readonly period: Period;
  readonly admittedAt: Date;
  heldNano: bigint | null;
  costNano?: bigint;
}

class Run {
  readonly model = new MoneyModel();
  private orgId = '';
  private appId = '';
  private users: string[] = [];
  private connections: string[] = [];
  private orgCap: bigint | null = null;
  private connectionCaps: Array<bigint | null> = [null, null];
  private policies: UserPolicy[] = [0, 1].map(() => ({
    capNano: null,
    creditMode: 'enforce',
    overrunPolicy: 'reject',
  }));
  private epoch = 0;
  private streamCursor = '-';
  private abandoned = 0;
  /** When the last abandoned hold lapses. */
  private lapseAtMs = 0;
  private readonly byRequest = new Map<string, Ran>();
  private sequence = 0;

  async start(walletNano: bigint): Promise<void> {
    this.orgId = await createOrganization(db, `money model ${prefix}`);
    this.appId = await createApp(db, this.orgId, 'app');
    this.connections = [`conn_a_${this.orgId}`, `conn_b_${this.orgId}`];
    for (const index of [0, 1]) {
      const userId = `pu_${index}_${this.orgId}`;
      await db.query(
        'INSERT INTO product_users (id, org_id, app_id, external_user_id) VALUES ($1, $2, $3, $4)',
        [userId, this.orgId, this.appId, `customer-${index}`],
      );
      this.users.push(userId);
    }
    await layer.wallets.topUp(this.orgId, walletNano);
    this.model.walletNano = walletNano;
  }

  private get period(): Period {
    return PERIODS[this.epoch]!;
  }

  /** A time inside the run's current month: when its requests are admitted. */
  private recordTime(): Date {
    if (this.epoch === 1) return new Date(this.period.start.getTime() + 3_600_000);
    return new Date(Math.min(Date.now(), this.period.end.getTime() - 1));
  }

  private settings(chain: Chain): AdmissionSettings {
    return {
      orgCapNano: this.orgCap,
      connectionCapNano: this.connectionCaps[chain.connection]!,
      user: chain.user === null ? null : this.policies[chain.user]!,
    };
  }

  /** The accounts as admission builds them (src/inference/admission.ts). */
  private accountsOf(
    chain: Chain,
    settings: AdmissionSettings,
    period: Period = this.period,
  ): RequestAccounts {
    const user: UserAccount | null =
      chain.user === null
        ? null
        : {
            productUserId: this.users[chain.user]!,
            capNano: settings.user!.capNano,
            creditMode: settings.user!.creditMode,
            period,
          };
    return {
      orgId: this.orgId,
      appConnectionId: this.connections[chain.connection]!,
      orgCap: settings.orgCapNano === null ? null : { capNano: settings.orgCapNano, period },
      connectionCap:
        settings.connectionCapNano === null
          ? null
          : { capNano: settings.connectionCapNano, period },
      user,
      walletPays: true,
      credentials: null,
    };
  }

  /** Admission's reserve: under limit_output, a refused request is sent again with what the
   * allowance covers (the output lowered), as src/inference/admission.ts does. */
  private async reserve(chain: Chain): Promise<Ran> {
    const abandon = chain.end.kind === 'abandon' && this.abandoned < MAX_ABANDONED;
    if (abandon) this.abandoned += 1;
    const money = abandon ? lapsing : layer;
    const settings = this.settings(chain);
    const ran: Ran = {
      chain:
        abandon || chain.end.kind !== 'abandon' ? chain : { ...chain, end: { kind: 'release' } },
      requestId: newRequestId(),
      settings,
      accounts: this.accountsOf(chain, settings),
      outcomes: [],
      period: this.period,
      admittedAt: this.recordTime(),
      heldNano: null,
    };
    this.byRequest.set(ran.requestId, ran);
    let amount = chain.estimateNano;
    const reserveOnce = async (): Promise<ReserveOutcome> => {
      const outcome = await money.budget.reserve({
        requestId: ran.requestId,
        accounts: ran.accounts,
        amountNano: amount,
      });
      ran.outcomes.push(outcome);
      return outcome;
    };
    let outcome = await reserveOnce();
    if (
      outcome.kind === 'allowance_short' &&
      settings.user?.overrunPolicy === 'limit_output' &&
      outcome.availableNano > 0n &&
      outcome.availableNano < amount
    ) {
      amount = outcome.availableNano;
      outcome = await reserveOnce();
    }
    for (const { kind } of ran.outcomes) tally.count(kind);
    if (ran.outcomes.length > 1) tally.count('limit_output retry');
    if (outcome.kind === 'held') {
      ran.heldNano = amount;
      if (abandon) this.lapseAtMs = Math.max(this.lapseAtMs, Date.now() + HOLD_LAPSE_MS + 5);
    }
    return ran;
  }

  private async end(ran: Ran): Promise<void> {
    if (ran.heldNano === null) return;
    const held = ran.heldNano;
    const end = ran.chain.end;
    tally.count(end.kind);
    if (end.kind === 'abandon') return;
    if (end.kind === 'release') {
      const accountKeys = this.holdKeys(ran.accounts);
      layer.budget.releases.release(ran.requestId, accountKeys, held, { key: false, user: false });
      return;
    }
    const c = end.cost;
    const costNano =
      c.k === 'zero'
        ? 0n
        : c.k === 'exact'
          ? held
          : c.k === 'partial'
            ? (held * BigInt(c.percent)) / 100n
            : held + c.extraNano;
    ran.costNano = costNano;
    const record: UsageRecord = usageRecord(this.orgId, costNano, {
      requestId: ran.requestId,
      createdAt: ran.admittedAt,
      appId: this.appId,
      appConnectionId: ran.accounts.appConnectionId,
      productUserId: ran.accounts.user?.productUserId ?? null,
      walletCostNano: costNano,
      reservedNano: held,
    });
    expect(await layer.budget.settle(record, ran.accounts)).toBe('settled');
  }

  /** The KEYS release.lua takes for a request's holds (as the budget store names them). */
  private holdKeys(accounts: RequestAccounts) {
    const { orgId } = accounts;
    const unused = keys.orgCap(orgId, 'unused');
    const wallet = keys.wallet(orgId);
    const orgCap = accounts.orgCap ? keys.orgCap(orgId, accounts.orgCap.period.key) : unused;
    const connCap = accounts.connectionCap
      ? keys.connectionCap(orgId, accounts.appConnectionId, accounts.connectionCap.period.key)
      : unused;
    const userSpend = accounts.user
      ? keys.userSpend(orgId, accounts.user.productUserId, accounts.user.period.key)
      : unused;
    return {
      wallet,
      wallet_expiries: keys.holdExpiries(wallet),
      org_cap: orgCap,
      org_cap_expiries: keys.holdExpiries(orgCap),
      conn_cap: connCap,
      conn_cap_expiries: keys.holdExpiries(connCap),
      user_spend: userSpend,
      user_spend_expiries: keys.holdExpiries(userSpend),
      in_flight: keys.inFlight(orgId),
      key_rate: unused,
      user_rate: unused,
    };
  }

  // ---- steps -----------------------------------------------------------------------------------

  async run(step: Step): Promise<void> {
    switch (step.t) {
      case 'batch':
        return this.batch(step.chains, step.topUps, step.change);
      case 'phased':
        return this.phased(step.chains, step.mid);
      case 'cap':
      case 'policy':
        return this.apply(step);
      case 'grant':
        return this.grant(step.user, step.amountNano, step.days);
      case 'revoke':
        return this.revoke(step.pick);
      case 'wallet':
        if (step.kind === 'topup') {
          if (step.amountNano === 0n) return;
          await layer.wallets.topUp(this.orgId, step.amountNano);
          this.model.walletNano += step.amountNano;
        } else {
          await layer.wallets.setBalance(this.orgId, step.amountNano);
          this.model.walletNano = step.amountNano;
        }
        return this.checkRedis('wallet change');
      case 'rebuild':
        return this.rebuild(step.drainFirst, step.lose);
      case 'rollover':
        this.epoch = 1;
        return;
      case 'drain':
        return this.checkLedger();
    }
  }

  /**
   * A cap or policy change: the requests admitted from now on read it (as after the caches'
   * invalidation); those in flight settle under what they were admitted with.
   */
  private apply(setting: Setting): void {
    if (setting.t === 'policy') this.policies[setting.user] = setting.policy;
    else if (setting.level === 'org') this.orgCap = setting.capNano;
    else this.connectionCaps[setting.level] = setting.capNano;
  }

  private async grant(user: number, amountNano: bigint, days: number | null): Promise<void> {
    this.sequence += 1;
    const expiresAt =
      days === null ? null : new Date(Date.now() + days * 86_400_000 + this.sequence);
    const made = await management.grantCredits({
      orgId: this.orgId,
      productUserId: this.users[user]!,
      amountNano,
      currency: 'USD',
      expiresAt,
      reason: null,
      idempotencyKey: null,
    });
    if (!('grant' in made)) throw new Error('a grant without an idempotency key was a replay');
    this.model.grants.push({
      id: made.grant.grant_id,
      user,
      expiresAtMs: expiresAt ? expiresAt.getTime() : NEVER_EXPIRES_MS,
      amountNano,
      remainingNano: amountNano,
      consumedNano: 0n,
      revoked: false,
      keptNano: 0n,
      keptFor: new Set(),
    });
  }

  /**
   * Revokes an active grant, `inFlight` being the requests in flight: the grant keeps money for
   * those of its user holding on their account of either month (the revocation looks at the
   * user's accounts of the month it runs in, the first, of the month before, and of the month
   * after, the second: decision 565).
   */
  private async revoke(pick: number, inFlight: readonly Ran[] = []): Promise<void> {
    const active = this.model.grants.filter((grant) => !grant.revoked);
    if (active.length === 0) return;
    const grant = active[pick % active.length]!;
    expect(await management.revokeGrant(grant.id, CLI_ACTOR, this.orgId)).toMatchObject({
      status: 'revoked',
    });
    this.model.revoke(grant.id, this.heldBy(grant.user, inFlight));
    tally.count(grant.keptNano > 0n ? 'revoked in flight' : 'revoked');
  }

  private async batch(
    chains: readonly Chain[],
    topUps: readonly bigint[],
    change: Extract<Step, { t: 'batch' }>['change'],
  ): Promise<void> {
    const before = this.snapshot();
    const modelBefore = this.model.clone();
    const ran = await Promise.all([
      ...chains.map(async (chain, index) => {
        // The requests start in order, each reading the settings synchronously: those from
        // the change's on are admitted under it while the earlier ones run.
        if (change && index === change.at) this.apply(change.setting);
        const request = await this.reserve(chain);
        await this.end(request);
        return request;
      }),
      ...topUps.map(async (amountNano) => {
        await layer.wallets.topUp(this.orgId, amountNano);
        this.model.walletNano += amountNano;
        return null;
      }),
    ]);
    const requests = ran.filter((request): request is Ran => request !== null);
    await this.quiesce();
    await this.replay(requests, topUps.length === 0);
    const topUpSum = topUps.reduce((sum, amount) => sum + amount, 0n);
    this.checkBounds(requests, before, topUpSum, 0n);
    if (requests.length === 1 && topUps.length === 0) this.checkAlone(requests[0]!, modelBefore);
    if (change && change.at >= chains.length) this.apply(change.setting);
    await this.checkRedis('after a batch');
  }

  /**
   * Requests reserved together; then, while they are in flight, grants, revocations and
   * top-ups; then the releases, and the settles all together (a revoked grant pays only these
   * requests, and what it kept goes with the last of them to settle, or stays, orphaned, when
   * some were released or abandoned, until their holds would have lapsed).
   */
  private async phased(chains: readonly Chain[], mid: readonly MidOp[]): Promise<void> {
    const before = this.snapshot();
    const requests = await Promise.all(chains.map((chain) => this.reserve(chain)));
    let topUps = 0n;
    let granted: bigint[] = [0n, 0n];
    for (const op of mid) {
      if (op.t === 'admit') {
        // Not one of the requests a revocation before it kept money for: never paid by it.
        if (this.model.draining.some((grants) => grants.length > 0)) {
          tally.count('admitted while a revoked grant drains');
        }
        requests.push(await this.reserve(op.chain));
      } else if (op.t === 'revoke') {
        await this.revoke(op.pick, requests);
      } else if (op.t === 'rollover') {
        // The requests in flight settle in the next month, on their own month's accounts.
        this.epoch = 1;
      } else if (op.t === 'grant') {
        await this.grant(op.user, op.amountNano, op.days);
        granted = granted.map((sum, user) => (user === op.user ? sum + op.amountNano : sum));
      } else {
        await layer.wallets.topUp(this.orgId, op.amountNano);
        this.model.walletNano += op.amountNano;
        topUps += op.amountNano;
      }
    }
    const released = requests.filter((request) => request.chain.end.kind === 'release');
    await Promise.all(released.map((request) => this.end(request)));
    await this.quiesce();
    await Promise.all(requests.filter((r) => !released.includes(r)).map((r) => this.end(r)));
    await this.replay(requests, true);
    this.model.orphanDraining();
    this.checkBounds(requests, before, topUps, granted);
    await this.checkRedis('after a phased batch');
  }

  /** What one user's requests in flight hold on the user's account (enforced with a cap). */
  private heldBy(user: number, requests: readonly Ran[]) {
    const holding = requests.filter(
      (request) =>
        request.heldNano !== null &&
        request.chain.user === user &&
        request.settings.user?.creditMode === 'enforce' &&
        request.settings.user.capNano !== null,
    );
    return {
      nano: holding.reduce((sum, request) => sum + request.heldNano!, 0n),
      requestIds: holding.map((request) => request.requestId),
    };
  }

  /** Waits for the releases to run and the abandoned holds to lapse. */
  private async quiesce(): Promise<void> {
    await eventually(async () => (layer.budget.releases.waiting === 0 ? true : undefined));
    await eventually(async () => (Date.now() > this.lapseAtMs ? true : undefined));
  }

  // ---- the model's side ------------------------------------------------------------------------

  private snapshot() {
    const period = this.period.key;
    return {
      period,
      wallet: this.model.walletNano,
      credits: [0, 1].map((u) => this.model.creditsOf(u)),
      /** The model as it was: what each period's accounts had spent. */
      model: this.model.clone(),
    };
  }

  /** Replays the batch's settles in the order Redis ran them: the usage stream's. */
  private async readStream(): Promise<UsageRecord[]> {
    const entries = (await redis.xrange(
      keys.usageStream(this.orgId),
      this.streamCursor === '-' ? '-' : `(${this.streamCursor}`,
      '+',
    )) as Array<[string, string[]]>;
    if (entries.length > 0) this.streamCursor = entries.at(-1)![0];
    return entries.map(([, fields]) => usageRecordFromFields(fields));
  }

  /**
   * `walletExact`: nothing but these settles changed the wallet meanwhile, so each record's
   * wallet_balance_after is the model's balance after it.
   */
  private async replay(requests: readonly Ran[], walletExact: boolean): Promise<void> {
    const records = await this.readStream();
    const settled = requests.filter((request) => request.costNano !== undefined);
    expect(records.map((record) => record.requestId).sort()).toEqual(
      settled.map((request) => request.requestId).sort(),
    );
    for (const record of records) {
      const ran = this.byRequest.get(record.requestId)!;
      const user = ran.chain.user;
      const policy = ran.settings.user;
      const expected = this.model.settle({
        requestId: record.requestId,
        costNano: ran.costNano!,
        walletCostNano: ran.costNano!,
        connection: ran.chain.connection,
        user,
        userPolicy: policy,
        period: ran.period.key,
      });
      if (expected.creditsNano > 0n) tally.count('paid by credits');
      if (
        expected.consumption.some(
          ({ grantId }) => this.model.grants.find((grant) => grant.id === grantId)!.revoked,
        )
      ) {
        tally.count('paid by a revoked grant');
      }
      if (ran.costNano! > ran.heldNano!) tally.count('cost above the hold');
      if (this.epoch === 1) tally.count('settled in the next month');
      if (ran.period !== this.period) tally.count('admitted before the rollover, settled after');
      expect(
        { credits: record.creditsCostNano, consumption: record.creditConsumption ?? [] },
        `credits of request ${record.requestId}`,
      ).toEqual({ credits: expected.creditsNano, consumption: expected.consumption });
      if (walletExact) {
        // (only a charge reports the balance after it)
        expect(record.walletBalanceAfterNano, 'wallet_balance_after').toBe(
          ran.costNano! > 0n ? this.model.walletNano : null,
        );
      }
    }
  }

  /**
   * Requests admitted together never settle more against a limit than it had left when they
   * started, plus their overruns of their own holds (cost above the estimate).
   */
  private checkBounds(
    requests: readonly Ran[],
    before: ReturnType<Run['snapshot']>,
    topUpsNano: bigint,
    grantedNano: bigint | readonly bigint[],
  ): void {
    const settled = requests.filter((request) => request.costNano !== undefined);
    const over = (request: Ran) =>
      request.costNano! > request.heldNano! ? request.costNano! - request.heldNano! : 0n;
    // A limit's period accounts each had what they had left (requests admitted after a month
    // turned mid-phase count in the next month's); what is shared across periods (credits, the
    // wallet) counts once.
    const bound = (
      name: string,
      under: (request: Ran) => bigint | null,
      left: (cap: bigint, periodKey: string) => bigint,
      shared = 0n,
    ) => {
      const admitted = settled.filter((request) => under(request) !== null);
      if (admitted.length === 0) return;
      const caps = new Map<string, bigint>();
      for (const request of admitted) {
        const cap = under(request)!;
        const known = caps.get(request.period.key);
        caps.set(request.period.key, known !== undefined && known > cap ? known : cap);
      }
      const spent = admitted.reduce((sum, request) => sum + request.costNano!, 0n);
      const overrun = admitted.reduce((sum, request) => sum + over(request), 0n);
      let allowed = shared + overrun;
      for (const [periodKey, cap] of caps) allowed += left(cap, periodKey);
      expect(spent, `${name}: settled ${spent}, allowed ${allowed}`).toBeLessThanOrEqual(allowed);
    };
    const positive = (value: bigint) => (value > 0n ? value : 0n);
    const spentBefore = (account: string) => before.model.spentOf(account);
    bound(
      'org cap',
      (r) => r.settings.orgCapNano,
      (cap, period) => positive(cap - spentBefore(`org:${period}`)),
    );
    for (const c of [0, 1]) {
      bound(
        `connection ${c} cap`,
        (r) => (r.chain.connection === c ? r.settings.connectionCapNano : null),
        (cap, period) => positive(cap - spentBefore(`conn:${c}:${period}`)),
      );
    }
    const granted = typeof grantedNano === 'bigint' ? [0n, 0n] : grantedNano;
    for (const u of [0, 1]) {
      bound(
        `user ${u} allowance`,
        (r) =>
          r.chain.user === u && r.settings.user?.creditMode === 'enforce'
            ? r.settings.user.capNano
            : null,
        (cap, period) => positive(cap - spentBefore(`user:${u}:${period}`)),
        before.credits[u]! + granted[u]!,
      );
    }
    bound(
      'wallet',
      () => 0n,
      () => 0n,
      positive(before.wallet) + topUpsNano,
    );
    // Settings that never refuse for allowance did not.
    for (const request of requests) {
      const user = request.settings.user;
      if (user && (user.creditMode !== 'enforce' || user.capNano === null)) {
        expect(request.outcomes.map((outcome) => outcome.kind)).not.toContain('allowance_short');
      }
      if (request.settings.orgCapNano === null && request.settings.connectionCapNano === null) {
        expect(request.outcomes.map((outcome) => outcome.kind)).not.toContain('cap_exceeded');
      }
    }
  }

  /** A request alone is refused exactly when the model says, with the model's figures. */
  private checkAlone(request: Ran, modelBefore: MoneyModel): void {
    const account = {
      connection: request.chain.connection,
      user: request.chain.user,
      period: this.period.key,
    };
    const expectRefusal = (outcome: ReserveOutcome, amountNano: bigint): void => {
      const refusal = modelBefore.refusal(request.settings, account, amountNano);
      const what = `a request of ${amountNano} alone`;
      if (refusal === null) expect(outcome.kind, what).toBe('held');
      else if (refusal.kind === 'cap_exceeded') {
        expect(outcome, what).toMatchObject({ kind: 'cap_exceeded', scope: refusal.scope });
      } else expect(outcome, what).toMatchObject(refusal);
    };
    const [first, second] = request.outcomes;
    expectRefusal(first!, request.chain.estimateNano);
    if (second) expectRefusal(second, (first as { availableNano: bigint }).availableNano);
  }

  // ---- checks against Redis and Postgres ---------------------------------------------------------

  /** Every account in Redis holds what the model says; nothing is held once all holds ended. */
  private async checkRedis(when: string): Promise<void> {
    const now = Date.now();
    const accountKeys: Array<[string, string, string]> = [
      [keys.wallet(this.orgId), 'balance', 'wallet'],
    ];
    for (const period of PERIODS) {
      accountKeys.push([keys.orgCap(this.orgId, period.key), 'spent', `org:${period.key}`]);
      for (const c of [0, 1]) {
        accountKeys.push([
          keys.connectionCap(this.orgId, this.connections[c]!, period.key),
          'spent',
          `conn:${c}:${period.key}`,
        ]);
      }
      for (const u of [0, 1]) {
        accountKeys.push([
          keys.userSpend(this.orgId, this.users[u]!, period.key),
          'spent',
          `user:${u}:${period.key}`,
        ]);
      }
    }
    for (const [key, field, name] of accountKeys) {
      const [value, reserved] = await redis.hmget(key, field, 'reserved');
      if (value === null || value === undefined) continue;
      const expected = name === 'wallet' ? this.model.walletNano : this.model.spentOf(name);
      expect(BigInt(value), `${when}: ${name}`).toBe(expected);
      // What is still counted as held is exactly the holds listed, and each of those lapsed.
      const holds = await redis.zrange(keys.holdExpiries(key), 0, -1, 'WITHSCORES');
      let listed = 0n;
      for (let index = 0; index < holds.length; index += 2) {
        listed += BigInt(holds[index]!.split(':').at(-1)!);
        expect(Number(holds[index + 1]), `${when}: ${name} hold ${holds[index]}`).toBeLessThan(now);
      }
      expect(BigInt(reserved ?? '0'), `${when}: ${name} reserved`).toBe(listed);
    }
    for (const u of [0, 1]) {
      const creditsKey = keys.userCredits(this.orgId, this.users[u]!, 'USD');
      const credits = await redis.hgetall(creditsKey);
      if (credits.loaded !== '1') continue;
      const zset = new Set(
        await redis.zrange(keys.userGrants(this.orgId, this.users[u]!, 'USD'), 0, -1),
      );
      const orphaned = this.model.orphaned[u]!;
      for (const grant of this.model.grants.filter((candidate) => candidate.user === u)) {
        const field = credits[`g:${grant.id}`];
        const expected = grant.revoked
          ? grant.keptNano > 0n
            ? grant.keptNano.toString()
            : undefined
          : grant.remainingNano.toString();
        // What an orphaned grant kept goes with a settle after the last of its holds lapsed.
        if (orphaned.includes(grant.id) && field === undefined) continue;
        expect(field, `${when}: grant ${grant.id} of user ${u}`).toBe(expected);
        expect(zset.has(grant.id), `${when}: grant ${grant.id} listed`).toBe(
          !grant.revoked && grant.remainingNano > 0n,
        );
      }
      const draining = this.model.draining[u]!;
      const listed = credits.draining?.split(',') ?? [];
      expect(
        listed.filter((id) => !orphaned.includes(id)),
        `${when}: draining of user ${u}`,
      ).toEqual(draining);
    }
  }

  /** Once the usage writer drained, the ledger sums to the model's figures. */
  private async checkLedger(): Promise<void> {
    await writer.drainOnce();
    const sums = async (column: string, id: string, period: Period): Promise<bigint> => {
      const { rows } = await db.query<{ spent: string }>(
        `SELECT COALESCE(sum(sell_cost), 0)::text AS spent FROM usage_records
          WHERE ${column} = $1 AND created_at >= $2 AND created_at < $3`,
        [id, period.start, period.end],
      );
      return numericToNano(rows[0]!.spent);
    };
    for (const period of PERIODS) {
      expect(await sums('org_id', this.orgId, period), 'ledger: org').toBe(
        this.model.spentOf(`org:${period.key}`),
      );
      for (const c of [0, 1]) {
        expect(await sums('app_connection_id', this.connections[c]!, period), 'ledger: conn').toBe(
          this.model.spentOf(`conn:${c}:${period.key}`),
        );
      }
      for (const u of [0, 1]) {
        expect(await sums('product_user_id', this.users[u]!, period), 'ledger: user').toBe(
          this.model.spentOf(`user:${u}:${period.key}`),
        );
      }
    }
    expect(await layer.wallets.ledgerBalanceNano(this.orgId), 'ledger: wallet').toBe(
      this.model.walletNano,
    );
    const { rows } = await db.query<{ id: string; consumed: string }>(
      `SELECT g.id, COALESCE(sum(c.amount), 0)::text AS consumed
         FROM credit_grants g LEFT JOIN credit_consumptions c ON c.grant_id = g.id
        WHERE g.org_id = $1 GROUP BY g.id`,
      [this.orgId],
    );
    const consumed = new Map(rows.map((row) => [row.id, numericToNano(row.consumed)]));
    for (const grant of this.model.grants) {
      expect(consumed.get(grant.id), `ledger: grant ${grant.id}`).toBe(grant.consumedNano);
    }
  }

  /**
   * Redis loses the org's accounts (after a drain, or with records still in the stream): the
   * next use rebuilds each from the ledger, and each holds what it held.
   */
  private async rebuild(drainFirst: boolean, lose: 'accounts' | 'credits'): Promise<void> {
    if (drainFirst) await writer.drainOnce();
    // Every month the run reached: after the rollover, the first one's accounts too (what the
    // requests admitted in it and settled after the rollover charged).
    const periods = PERIODS.slice(0, this.epoch + 1);
    const lost: string[] = [];
    if (lose === 'accounts') {
      lost.push(keys.wallet(this.orgId));
      for (const period of periods) {
        lost.push(keys.orgCap(this.orgId, period.key));
        for (const c of [0, 1]) {
          lost.push(keys.connectionCap(this.orgId, this.connections[c]!, period.key));
        }
        for (const u of [0, 1]) {
          lost.push(keys.userSpend(this.orgId, this.users[u]!, period.key));
        }
      }
    }
    for (const u of [0, 1]) {
      lost.push(keys.userCredits(this.orgId, this.users[u]!, 'USD'));
      lost.push(keys.userGrants(this.orgId, this.users[u]!, 'USD'));
    }
    await redis.del(...lost, ...lost.map((key) => keys.holdExpiries(key)));
    this.model.forgetKept();
    for (const c of [0, 1]) {
      for (const u of [0, 1]) {
        const capped: AdmissionSettings = {
          orgCapNano: 1n,
          connectionCapNano: 1n,
          user: { capNano: 1n, creditMode: 'enforce', overrunPolicy: 'reject' },
        };
        for (const period of periods) {
          const accounts = this.accountsOf(
            { user: u, connection: c, estimateNano: 1n, end: { kind: 'release' } },
            capped,
            period,
          );
          await layer.loader.load(['wallet', 'org_cap', 'conn_cap', 'user'], accounts);
        }
      }
    }
    await this.checkRedis(`${lose} rebuilt${drainFirst ? ' after a drain' : ''}`);
  }

  async finish(): Promise<void> {
    await this.checkLedger();
    await this.rebuild(false, 'accounts');
  }
}

/** Runs `numRuns` scenarios of `scenarios` from each seed: a fixed one and three random ones. */
async function runScenarios(
  scenarios: typeof scenario | typeof revocationScenario,
  fixedSeed: number,
  numRuns: number,
): Promise<void> {
  const seeds = [
    fixedSeed,
    ...Array.from({ length: 3 }, () => Math.floor(Math.random() * 2 ** 31)),
  ];
  for (const seed of seeds) {
    await fc.assert(
      fc.asyncProperty(scenarios, async ({ walletNano, policies, grants, steps }) => {
        const run = new Run();
        await run.start(walletNano);
        for (const [user, userPolicy] of policies.entries()) {
          await run.run({ t: 'policy', user, policy: userPolicy });
        }
        for (const grant of grants) await run.run({ t: 'grant', ...grant });
        for (const step of steps) await run.run(step);
        await run.finish();
      }),
      { seed, numRuns, endOnFailure: true },
    );
  }
}

describe('the money layer against its reference model', () => {
  it('keeps every counter, hold and ledger sum where the spec puts it, under random concurrent operations', async () => {
    await runScenarios(scenario, 20261128, 8);
    // The scenarios reached every kind of outcome (a generator that drifted would not).
    for (const what of [
      'held',
      'cap_exceeded',
      'allowance_short',
      'wallet_short',
      'paid by credits',
      'cost above the hold',
      'settled in the next month',
      'admitted before the rollover, settled after',
      'revoked',
      'release',
      'abandon',
    ]) {
      expect(tally.of(what), what).toBeGreaterThan(0);
    }
  }, 120_000);

  it('pays from a grant revoked in flight exactly the requests it kept money for', async () => {
    await runScenarios(revocationScenario, 20261129, 4);
    for (const what of [
      'revoked in flight',
      'paid by a revoked grant',
      'admitted while a revoked grant drains',
    ]) {
      expect(tally.of(what), what).toBeGreaterThan(0);
    }
  }, 120_000);
});
