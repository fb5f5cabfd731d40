// BudgetStore on Redis Lua: reserve.lua and settle.lua, one round trip each (plus a load
// from Postgres the first time an account is used in a period).
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import { usageRecordToFields } from '../ledger/usage-record.js';
import { SETTLEMENT_CURRENCY } from '../money.js';
import { monthlyPeriod, periodBefore } from '../periods.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts, ScriptKeys } from '../redis/scripts.js';
import { encodeDraft } from './in-flight-draft.js';
import type { AccountLoader, AccountName } from './account-loader.js';
import { HoldReleases, type RatesCounted } from './hold-releases.js';
import { productUserBucket, RecentRateRefusals } from './recent-rate-refusals.js';
import { RenewalFailures } from './renewal-failures.js';
import type { Logger } from '../log.js';
import type {
  BudgetStore,
  CredentialChoice,
  FailoverOutcome,
  FailoverRequest,
  HeldRequest,
  NoCredentialOutcome,
  RateBucket,
  RateLimitedOutcome,
  RateTakeOutcome,
  RequestAccounts,
  RequestRateLimits,
  ReserveOutcome,
  ReserveRequest,
  SettleAccounts,
} from './budget-store.js';

/** The KEYS reserve.lua and settle.lua share: every account a request can touch. */
type RequestAccountKeys = Omit<
  ScriptKeys<'reserve'>,
  | 'cred_cooldowns'
  | 'cred_rotation'
  | 'in_flight'
  | 'key_rate'
  | 'user_rate'
  | 'previous_spend'
  | 'previous_spend_expiries'
>;

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
  RateLimited = 6,
}

/** Status codes returned by settle.lua. */
export enum SettleCode {
  Settled = 0,
  AlreadySettled = 1,
}

/** Settle retries come within milliseconds; the marker outlives them by far, without costing
 * Redis one key per request for days. */
const SETTLED_MARKER_TTL_S = 300;
/** A token count sent again after a reconnect (decision 318) comes within the same bound. */
const COUNTED_MARKER_TTL_MS = SETTLED_MARKER_TTL_S * 1000;
const STREAM_REGISTRATION_REFRESH_MS = 60_000;
/** Placeholder key for an account a request does not use (same slot, never written). */
const UNUSED = 'unused';

/**
 * When each org's usage stream was last announced to the writers' registry, per Redis client:
 * shared by every store on that client, which then needs one `ready` listener, not one per
 * store (a listener per store piled up on a shared client: MaxListenersExceededWarning).
 */
const streamAnnouncements = new WeakMap<RedisClient, Map<string, number>>();

function announcementsOf(redis: RedisClient): Map<string, number> {
  let announced = streamAnnouncements.get(redis);
  if (!announced) {
    const created = new Map<string, number>();
    // After a reconnect Redis may be a new, empty one: announce every stream again.
    redis.on('ready', () => created.clear());
    streamAnnouncements.set(redis, created);
    announced = created;
  }
  return announced;
}

/**
 * The renewals of the holds kept on each client (running requests, spooled settles), sent again
 * the moment the client is ready after a reconnect (one `ready` listener per client): an outage
 * longer than what was left of a hold's lapse left it lapsed, still listed (nothing ran in
 * Redis meanwhile), and the first reserve to touch its account would sweep it; sent from the
 * listener, they go before anything this instance sends after the reconnect (decision 581).
 */
const keptHolds = new WeakMap<RedisClient, Set<() => void>>();

function keptHoldsOf(redis: RedisClient): Set<() => void> {
  let kept = keptHolds.get(redis);
  if (!kept) {
    const created = new Set<() => void>();
    redis.on('ready', () => {
      for (const renew of created) renew();
    });
    keptHolds.set(redis, created);
    kept = created;
  }
  return kept;
}

/** The releases of reserves given up on, one per client (one `ready` listener each). */
const holdReleases = new WeakMap<RedisClient, HoldReleases>();

function releasesOf(redis: RedisClient, create: () => HoldReleases): HoldReleases {
  let releases = holdReleases.get(redis);
  if (!releases) {
    releases = create();
    holdReleases.set(redis, releases);
  }
  return releases;
}

export class RedisBudgetStore implements BudgetStore {
  private readonly streamRegisteredAtMs: Map<string, number>;
  /** Takes back the holds of reserves that got no answer (decision 318). */
  readonly releases: HoldReleases;
  /** Keys this store's reserves found past their own rate limit, and until when. */
  private readonly rateRefusals = new RecentRateRefusals();
  /**
   * How often a kept request's holds are renewed: a third of the lapse, so two renewals may be
   * late (a stalled loop, a slow Redis) and the holds still stand.
   */
  private readonly renewalRoundMs: number;
  private readonly renewalFailures: RenewalFailures;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly scripts: RedisScripts,
    private readonly loader: AccountLoader,
    private readonly reservationTtlMs: number,
    /** This gateway instance, named in the drafts of the requests it holds. */
    private readonly instanceId: string = randomUUID(),
    private readonly logger?: Logger,
  ) {
    this.streamRegisteredAtMs = announcementsOf(redis);
    this.renewalRoundMs = Math.max(1, Math.floor(reservationTtlMs / 3));
    this.renewalFailures = new RenewalFailures(logger, this.renewalRoundMs);
    // Its `ready` listener now, before the ones that send commands later (the spool's replay).
    keptHoldsOf(redis);
    this.releases = releasesOf(
      redis,
      () => new HoldReleases(redis, scripts, reservationTtlMs, logger),
    );
  }

  knownRateRefusal(limits: RequestRateLimits): RateLimitedOutcome | undefined {
    if (limits.keyPerMinute === null) return undefined;
    const nowMs = Date.now();
    const known = this.rateRefusals.refusal(limits.apiKeyId, limits.keyPerMinute, nowMs);
    if (!known) return undefined;
    // Both buckets refuse: the longer wait is answered, as the reserve would (decision 362).
    const bucket = userBucketOf(limits);
    const user =
      bucket !== undefined
        ? this.rateRefusals.refusal(bucket, limits.productUserPerMinute!, nowMs)
        : undefined;
    const longer = user && user.retryAfterMs > known.retryAfterMs ? user : known;
    const { limitPerMinute, retryAfterMs, resetMs } = longer;
    const scope = longer === known ? 'key' : 'product_user';
    const rateLimit = { limitPerMinute, remaining: 0, resetMs, atMs: nowMs };
    return { kind: 'rate_limited', scope, limitPerMinute, retryAfterMs, rateLimit };
  }

  async takeCountTokens(bucket: RateBucket): Promise<RateTakeOutcome> {
    const atMs = Date.now();
    const [code, first, resetMs] = (await this.scripts.rateLimit(
      {
        bucket: this.keys.countTokensRate(bucket.orgId, bucket.apiKeyId),
        counted: this.keys.countTokensCounted(bucket.orgId, bucket.requestId),
      },
      { limit: bucket.limitPerMinute, now_ms: atMs, counted_ttl_ms: COUNTED_MARKER_TTL_MS },
    )) as [number, number, number];
    const limitPerMinute = bucket.limitPerMinute;
    if (code === ReserveCode.Held) {
      return { kind: 'passed', rateLimit: { limitPerMinute, remaining: first, resetMs, atMs } };
    }
    const rateLimit = { limitPerMinute, remaining: 0, resetMs, atMs };
    return { kind: 'rate_limited', scope: 'key', limitPerMinute, retryAfterMs: first, rateLimit };
  }

  async reserve(request: ReserveRequest): Promise<ReserveOutcome> {
    const { accounts, rateLimits } = request;
    const keyRpm = rateLimits?.keyPerMinute ?? null;
    const userRpm = (accounts.user && rateLimits?.productUserPerMinute) ?? null;
    // Without a limit its bucket is a placeholder of the org's slot, never read.
    const noBucket = this.keys.orgCap(accounts.orgId, UNUSED);
    // Named keys first, then the spread (a property after a spread costs a new map per call:
    // docs/decisions.md, 264).
    const keys = {
      cred_cooldowns: this.keys.credentialCooldowns(accounts.orgId),
      cred_rotation: this.keys.credentialRotation(accounts.orgId),
      in_flight: this.keys.inFlight(accounts.orgId),
      key_rate:
        keyRpm !== null ? this.keys.keyRate(accounts.orgId, rateLimits!.apiKeyId) : noBucket,
      user_rate:
        userRpm !== null
          ? this.keys.productUserRate(
              accounts.orgId,
              rateLimits!.apiKeyId,
              accounts.user!.productUserId,
            )
          : noBucket,
      ...this.previousSpendKeys(accounts, noBucket),
      ...this.accountKeys(accounts),
    };
    const announcing = request.lostRecord && this.registerStream(request.lostRecord.orgId);
    if (announcing) await announcing;
    // A reserve without an answer is given up on (and what it may hold released) on either call.
    let calledAtMs = 0; // the now_ms of the call that answered
    const call = async (): Promise<Array<string | number>> => {
      const now = Date.now();
      calledAtMs = now;
      const expiresAtMs = now + this.reservationTtlMs;
      try {
        return (await this.scripts.reserve(keys, {
          request_id: request.requestId,
          amount_nano: request.amountNano.toString(),
          now_ms: now,
          expires_at_ms: expiresAtMs,
          wallet_pays: accounts.walletPays ? '1' : '0',
          org_cap_nano: accounts.orgCap?.capNano.toString() ?? '',
          conn_cap_nano: accounts.connectionCap?.capNano.toString() ?? '',
          user_cap_nano: accounts.user?.capNano?.toString() ?? '',
          user_mode: accounts.user?.creditMode ?? 'none',
          credentials: credentialTiers(accounts.credentials),
          byok_only: accounts.credentials?.byokOnly ? '1' : '0',
          draft: request.lostRecord
            ? encodeDraft({
                instance: this.instanceId,
                lapsesAtMs: expiresAtMs,
                record: request.lostRecord,
                accounts,
              })
            : '',
          key_rpm: keyRpm ?? '',
          user_rpm: userRpm ?? '',
        })) as Array<string | number>;
      } catch (error) {
        throw this.givenUp(error, request, keys, { key: keyRpm !== null, user: userRpm !== null });
      }
    };
    let result = await call();
    if (result[0] === ReserveCode.NotLoaded) {
      await this.loader.load(result.slice(1) as AccountName[], accounts);
      result = await call();
    }
    result = await this.askedAgainIfOwed(accounts.orgId, result, call);
    const amount = (index: number): bigint => BigInt(result[index] ?? '0');
    switch (result[0]) {
      case ReserveCode.Held: {
        const credentialId = result[1] ? String(result[1]) : null;
        if (result.length < 5) return { kind: 'held', credentialId };
        const rateLimit = {
          limitPerMinute: Number(result[2]),
          remaining: Number(result[3]),
          resetMs: Number(result[4]),
          atMs: calledAtMs,
        };
        return { kind: 'held', credentialId, rateLimit };
      }
      case ReserveCode.NoCredential:
        return noCredential(result[1], calledAtMs);
      case ReserveCode.WalletShort:
        return { kind: 'wallet_short', availableNano: amount(1) };
      case ReserveCode.RateLimited: {
        const refusal: RateLimitedOutcome = {
          kind: 'rate_limited',
          scope: result[1] === 'key' ? 'key' : 'product_user',
          limitPerMinute: Number(result[2]),
          retryAfterMs: Number(result[3]),
          rateLimit: {
            limitPerMinute: Number(result[2]),
            remaining: 0,
            resetMs: Number(result[4]),
            atMs: calledAtMs,
          },
        };
        // Counted from the now_ms the script was given (decision 347); a product user's
        // bucket by the external id the request named (decision 362).
        const bucket =
          refusal.scope === 'key' ? rateLimits?.apiKeyId : rateLimits && userBucketOf(rateLimits);
        if (bucket !== undefined) {
          this.rateRefusals.remember(bucket, calledAtMs, {
            limitPerMinute: refusal.limitPerMinute,
            retryAfterMs: refusal.retryAfterMs,
            resetMs: refusal.rateLimit.resetMs,
          });
        }
        return refusal;
      }
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

  /**
   * A reserve without an answer (REDIS_TIMEOUT_MS passed, or its connection closed first) may
   * have run or may still run: what it may hold is released, on the same connection, after it
   * (HoldReleases), and the arrival it counted in its rate buckets given back (decision 353).
   * The request answers 503. A script error (ReplyError) wrote nothing.
   */
  private givenUp(
    error: unknown,
    request: ReserveRequest,
    keys: ScriptKeys<'reserve'>,
    rates: RatesCounted,
  ): unknown {
    if ((error as Error | null)?.name !== 'ReplyError') {
      this.releases.release(
        request.requestId,
        {
          wallet: keys.wallet,
          wallet_expiries: keys.wallet_expiries,
          org_cap: keys.org_cap,
          org_cap_expiries: keys.org_cap_expiries,
          conn_cap: keys.conn_cap,
          conn_cap_expiries: keys.conn_cap_expiries,
          user_spend: keys.user_spend,
          user_spend_expiries: keys.user_spend_expiries,
          in_flight: keys.in_flight,
          key_rate: keys.key_rate,
          user_rate: keys.user_rate,
        },
        request.amountNano,
        rates,
      );
    }
    return error;
  }

  /**
   * A request the wallet refused (reserve.lua's or failover.lua's WalletShort) while it was
   * short of a top-up whose Redis step failed after its commit: the top-up is added, then the
   * request asked again (decision 521; 543: both scripts, through here). Only on this refusal:
   * one HKEYS when the wallet is owed nothing, the hot path unchanged. Asking failover.lua again
   * cools nothing down twice: the credential is cooling already, so no second notice.
   */
  private async askedAgainIfOwed(
    orgId: string,
    result: Array<string | number>,
    call: () => Promise<Array<string | number>>,
  ): Promise<Array<string | number>> {
    if (result[0] !== ReserveCode.WalletShort) return result;
    return (await this.loader.applyOwedChanges(orgId)) ? call() : result;
  }

  async failover(request: FailoverRequest): Promise<FailoverOutcome> {
    const { accounts } = request;
    await this.registerStream(accounts.orgId);
    const wallet = this.keys.wallet(accounts.orgId);
    const keys = {
      wallet,
      wallet_expiries: this.keys.holdExpiries(wallet),
      cred_cooldowns: this.keys.credentialCooldowns(accounts.orgId),
      cred_rotation: this.keys.credentialRotation(accounts.orgId),
      usage_stream: this.keys.usageStream(accounts.orgId),
      in_flight: this.keys.inFlight(accounts.orgId),
    };
    let calledAtMs = 0; // the now_ms of the call that answered
    const call = async (): Promise<Array<string | number>> => {
      const now = Date.now();
      calledAtMs = now;
      return (await this.scripts.failover(keys, {
        request_id: request.requestId,
        failed_credential_id: request.failedCredentialId,
        cooldown_until_ms: request.cooldownUntilMs,
        credentials: credentialTiers(accounts.credentials),
        byok_only: accounts.credentials?.byokOnly ? '1' : '0',
        amount_nano: request.amountNano.toString(),
        now_ms: now,
        expires_at_ms: now + this.reservationTtlMs,
        org_id: accounts.orgId,
        failure: request.failure,
        upstream_status: request.upstreamStatus,
      })) as Array<string | number>;
    };
    let result = await call();
    if (result[0] === ReserveCode.NotLoaded) {
      await this.loader.load(['wallet'], accounts);
      result = await call();
    }
    result = await this.askedAgainIfOwed(accounts.orgId, result, call);
    switch (result[0]) {
      case ReserveCode.Held:
        return result[1]
          ? { kind: 'credential', credentialId: String(result[1]) }
          : { kind: 'system' };
      case ReserveCode.WalletShort:
        return { kind: 'wallet_short', availableNano: BigInt(result[1] ?? '0') };
      case ReserveCode.NoCredential:
        return noCredential(result[1], calledAtMs);
      default:
        throw new Error(`failover.lua returned unexpected code ${String(result[0])}`);
    }
  }

  keepHeld(request: HeldRequest, options: { readonly renewAtOnce?: boolean } = {}): () => void {
    const renew = (): void => {
      this.renewHolds(request).then(
        () => this.renewalFailures.succeeded(),
        (error: unknown) => this.renewalFailures.failed(error, request.requestId),
      );
    };
    const timer = setInterval(renew, this.renewalRoundMs);
    timer.unref();
    const kept = keptHoldsOf(this.redis);
    kept.add(renew);
    if (options.renewAtOnce) renew();
    return () => {
      clearInterval(timer);
      kept.delete(renew);
    };
  }

  /** Moves the lapse of the request's holds to a full RESERVATION_TTL_MS from now. */
  private async renewHolds(request: HeldRequest): Promise<void> {
    const { accounts } = request;
    const keys = this.accountKeys(accounts);
    await this.scripts.holdRenew(
      {
        wallet_expiries: keys.wallet_expiries,
        org_cap_expiries: keys.org_cap_expiries,
        conn_cap_expiries: keys.conn_cap_expiries,
        user_spend_expiries: keys.user_spend_expiries,
        in_flight: this.keys.inFlight(accounts.orgId),
        // The revoked grants that keep money for it keep it while it runs (decision 536).
        user_credits: keys.user_credits,
        draining_for: this.drainingForKey(accounts),
      },
      {
        request_id: request.requestId,
        held_nano: request.amountNano.toString(),
        expires_at_ms: Date.now() + this.reservationTtlMs,
      },
    );
  }

  async settle(
    record: UsageRecord,
    accounts: SettleAccounts,
  ): Promise<'settled' | 'already_settled'> {
    const announcing = this.registerStream(record.orgId);
    if (announcing) await announcing;
    const result = (await this.scripts.settle(
      {
        settled_marker: this.keys.settled(record.orgId, record.requestId),
        usage_stream: this.keys.usageStream(record.orgId),
        in_flight: this.keys.inFlight(accounts.orgId),
        rebuilds: this.keys.rebuilds(record.orgId),
        draining_for: this.drainingForKey(accounts),
        // A level without a cap still has its account charged when it exists: the calendar
        // month's, by when the ledger counts the record (settle.lua; decision 271).
        ...this.accountKeys(accounts, monthlyPeriod(record.createdAt, null).key),
      },
      {
        request_id: record.requestId,
        cost_nano: record.sellCostNano.toString(),
        wallet_cost_nano: record.walletCostNano.toString(),
        held_nano: record.reservedNano.toString(),
        marker_ttl_s: SETTLED_MARKER_TTL_S,
        now_ms: Date.now(),
        user_cap_nano: accounts.user?.capNano?.toString() ?? '',
        user_mode: accounts.user?.creditMode ?? 'none',
        uses_org_cap: accounts.orgCap ? '1' : '0',
        uses_conn_cap: accounts.connectionCap ? '1' : '0',
        // What settle needs to note the cap marks a charge crosses (webhook events).
        org_cap_nano: accounts.orgCap?.capNano.toString() ?? '',
        conn_cap_nano: accounts.connectionCap?.capNano.toString() ?? '',
        user_period: accounts.user?.period.key ?? '',
        cap_period: (accounts.orgCap ?? accounts.connectionCap)?.period.key ?? '',
        // The grants live at its admission pay it, one that expired since too (settle.lua;
        // docs/decisions.md, 288, 498): its record is dated at its admission (402).
        admitted_ms: record.createdAt.getTime(),
      },
      usageRecordToFields(record),
    )) as [SettleCode, string?, string?];
    return result[0] === SettleCode.Settled ? 'settled' : 'already_settled';
  }

  /** The requests the user's revoked grants keep money for (a placeholder without a user). */
  private drainingForKey(accounts: SettleAccounts): string {
    return accounts.user
      ? this.keys.userDrainingFor(accounts.orgId, accounts.user.productUserId, SETTLEMENT_CURRENCY)
      : this.keys.orgCap(accounts.orgId, UNUSED);
  }

  /**
   * The user's account of the period before the request's (reserve.lua: a request admitted
   * before the period turned holds there until it settles, on the same credits). Read only
   * under an enforced cap; otherwise a placeholder of the org's slot.
   */
  private previousSpendKeys(
    accounts: RequestAccounts,
    unused: string,
  ): Pick<ScriptKeys<'reserve'>, 'previous_spend' | 'previous_spend_expiries'> {
    const user = accounts.user;
    const previous =
      user && user.creditMode === 'enforce' && user.capNano !== null
        ? this.keys.userSpend(accounts.orgId, user.productUserId, periodBefore(user.period).key)
        : unused;
    return { previous_spend: previous, previous_spend_expiries: this.keys.holdExpiries(previous) };
  }

  /**
   * The account KEYS of reserve.lua and settle.lua. Costs are in the settlement currency,
   * so only the user's credits in that currency can pay them. A level without a cap names
   * its account of `uncappedPeriodKey` (settle charges it if it exists), else a placeholder.
   */
  private accountKeys(accounts: SettleAccounts, uncappedPeriodKey?: string): RequestAccountKeys {
    const { orgId } = accounts;
    const unused = this.keys.orgCap(orgId, UNUSED);
    const wallet = this.keys.wallet(orgId);
    const capPeriodKey = (cap: SettleAccounts['orgCap']): string | undefined =>
      cap ? cap.period.key : uncappedPeriodKey;
    const orgPeriod = capPeriodKey(accounts.orgCap);
    const connPeriod = capPeriodKey(accounts.connectionCap);
    const orgCap = orgPeriod ? this.keys.orgCap(orgId, orgPeriod) : unused;
    const connCap = connPeriod
      ? this.keys.connectionCap(orgId, accounts.appConnectionId, connPeriod)
      : unused;
    const user = accounts.user;
    const userSpend = user
      ? this.keys.userSpend(orgId, user.productUserId, user.period.key)
      : unused;
    return {
      wallet,
      wallet_expiries: this.keys.holdExpiries(wallet),
      org_cap: orgCap,
      org_cap_expiries: this.keys.holdExpiries(orgCap),
      conn_cap: connCap,
      conn_cap_expiries: this.keys.holdExpiries(connCap),
      user_spend: userSpend,
      user_spend_expiries: this.keys.holdExpiries(userSpend),
      user_credits: user
        ? this.keys.userCredits(orgId, user.productUserId, SETTLEMENT_CURRENCY)
        : unused,
      user_grants: user
        ? this.keys.userGrants(orgId, user.productUserId, SETTLEMENT_CURRENCY)
        : unused,
    };
  }

  /**
   * Makes sure the writers know the org's stream. Re-announced every minute, not once per
   * process: a Redis that restarted empty has lost the registry, and the records that settle
   * after it must still reach Postgres.
   */
  private registerStream(orgId: string): Promise<void> | undefined {
    const now = Date.now();
    if ((this.streamRegisteredAtMs.get(orgId) ?? 0) > now - STREAM_REGISTRATION_REFRESH_MS) {
      // Announced within the minute (nearly every call): no promise, no await at the caller.
      return undefined;
    }
    return this.announceStream(orgId, now);
  }

  private async announceStream(orgId: string, now: number): Promise<void> {
    try {
      await this.redis.sadd(this.keys.usageStreamRegistry(), this.keys.usageStream(orgId));
    } catch {
      // On a cluster the registry lives on one shard, which may be away while the org's is
      // not: the settle goes on (its record waits in the org's stream), and the next one
      // announces the stream again.
      return;
    }
    this.streamRegisteredAtMs.set(orgId, now);
  }
}

/**
 * The remembered bucket of the product user a request names under its key, if it has one and
 * the key a limit of its own (read only beside a known refusal of the key).
 */
function userBucketOf(limits: RequestRateLimits): string | undefined {
  return limits.keyPerMinute !== null &&
    limits.productUserPerMinute !== null &&
    limits.externalUserId !== undefined
    ? productUserBucket(limits.apiKeyId, limits.externalUserId)
    : undefined;
}

/**
 * Every credential cooling down: how long until the first of them stops (from the script's
 * `cooling_until_ms`, read against the clock the call was made at); absent when the script did
 * not say (an older version's).
 */
function noCredential(
  coolingUntilMs: string | number | undefined,
  calledAtMs: number,
): NoCredentialOutcome {
  if (coolingUntilMs === undefined) return { kind: 'no_credential' };
  return { kind: 'no_credential', retryAfterMs: Math.max(0, Number(coolingUntilMs) - calledAtMs) };
}
