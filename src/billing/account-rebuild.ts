// Rebuilds one account missing from Redis out of the ledger, exactly while its org settles
// (docs/decisions.md, 297). Settle does not charge an account that is not in Redis, so the
// installed amount must count every record settled before the install, once:
//
// 0. the account is listed in the org's `rebuilds` hash under a token, in the same atomic step
// as a check that it is missing (if it is there, another rebuild installed it: done): from
// then on, each settle that meets it missing adds what it would have charged to that field
// (settle.lua), until an install takes the listing off; 1. the stream's
// deletion count is read; 2. a ledger snapshot is taken; 3. the org's stream and the
// `rebuilds` hash are read in one MULTI (a cut). A record settled before the cut is in the
// snapshot (committed before it) or in the cut, or both (dropped from the cut by request id,
// in the snapshot); it is in neither only if the writer committed it after the snapshot and
// removed it before the cut, which moves the deletion count between 1 and 3: then the rebuild
// measures again (a window of one round trip). 4. account-rebuild.lua installs the amount
// plus the field's growth since the cut, if the cut and the install both find the rebuild's
// token (no install came between, so the account was missing throughout; else it measures
// again): what settled after the cut, none of it in the
// snapshot, wherever the writer has moved it meanwhile (decision 304: a busy org's rebuild
// is not refused for its traffic). A record settled after the install is charged by settle.
// Steps 1 to 3 (a measurement) serve every rebuild of the org that listed its account before
// they began (decision 306); the proof above holds for each, since each listing came first.
// A measurement also reads product users' credits (decision 308): the grants in the snapshot
// less what the cut's unwritten records drew on them, exact by the same proof. No settle draws
// on credits that are not in Redis, and a load merges (what Redis has stays), so credits need
// no listing.
import { randomBytes } from 'node:crypto';
import { readOnlySnapshot, type DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import {
  listingField,
  unwrittenAtSnapshot,
  type UnwrittenUsage,
} from '../ledger/unwritten-usage.js';
import {
  ledgerAmounts,
  ledgerGrants,
  type LedgerAmount,
  type LedgerGrant,
} from './ledger-amounts.js';

/**
 * Loaded credits go after this long unless a load comes first; every load of a user's period
 * account loads them again (a merge: what is in Redis stays). Longer than the longest period
 * (31 days) and its grace together, so the credits loaded with a period's account outlive it:
 * a request held on the account never finds them gone, nor a revoked or expired grant's part
 * dropped by a rebuild (docs/decisions.md, 289).
 */
export const CREDITS_TTL_MS = 40 * 24 * 3600 * 1000;
/** The expiry score of a grant that never expires. */
export const NEVER_EXPIRES_MS = 253_402_300_799_000; // 9999-12-31

/**
 * Measurements tried: one the writer may have cut short is taken again, and installed anyway
 * the last time; only installs taking the account's listing off every time make it give up.
 */
const MAX_ATTEMPTS = 8;
const RETRY_PAUSE_MS = 10;

/** No measurement could be used (see MAX_ATTEMPTS). */
export class AccountRebuildBusyError extends Error {
  override readonly name = 'AccountRebuildBusyError';
}

/** The accounts a rebuild installs. */
export type AccountKind = 'wallet' | 'org_cap' | 'conn_cap' | 'user';

/**
 * How a rebuild ended: `installed` it, installed it `inexact` (see AccountRebuilder.measure), found it
 * `present` (another rebuild installed it), or `gave_up` (AccountRebuildBusyError: the
 * request answers 503); after how many measurements.
 */
export type RebuildObserver = (
  kind: AccountKind,
  outcome: 'installed' | 'inexact' | 'present' | 'gave_up',
  measurements: number,
) => void;

export interface RebuildTarget {
  readonly kind: AccountKind;
  readonly orgId: string;
  readonly key: string;
  readonly field: 'balance' | 'spent';
  /** When the account goes (a period's end and its grace); null: never (the wallet). */
  readonly expireAtMs: number | null;
  /** What the account holds per the ledger (summed with the other accounts measured with it). */
  readonly amount: LedgerAmount;
  /**
   * A user's account: the user's credits in the settlement currency, installed with it in one
   * step (account-rebuild-user.lua).
   */
  readonly credits?: CreditsTarget;
}

/** A product user's credits in one currency. */
export interface CreditsTarget {
  readonly orgId: string;
  readonly productUserId: string;
  readonly currency: string;
  readonly keys: { readonly user_credits: string; readonly user_grants: string };
}

export interface RebuildParts {
  readonly db: DbPool;
  readonly keys: RedisKeys;
  readonly scripts: Pick<RedisScripts, 'accountRebuild' | 'accountRebuildUser' | 'creditsLoad'>;
  readonly unwritten: UnwrittenUsage;
  /** Hears how each rebuild ended (the gateway counts them: gw_account_rebuilds_total). */
  readonly observe?: RebuildObserver | undefined;
  /** Hears how long each measurement took, in seconds (gw_account_rebuild_measurement_seconds). */
  readonly observeMeasurement?: ((seconds: number) => void) | undefined;
}

/**
 * What one measurement found for one rebuild: the account's amount at the cut and the cut's
 * `rebuilds` field, and the credits' grants as `grant_id, remaining_nano, expires_at_ms`
 * triples (credits-merge.lua).
 */
interface Measured {
  readonly exact: boolean;
  readonly account?: { readonly missedAtCut: string; readonly amount: bigint };
  readonly grants: string[];
}

/** A rebuild waiting for its org's next measurement: an account (with its credits), or credits. */
interface Waiting {
  readonly orgId: string;
  /** The account and the token it is listed under; absent: the credits alone. */
  readonly account?: { readonly target: RebuildTarget; readonly listing: string };
  readonly credits?: CreditsTarget;
  readonly lastTry: boolean;
  /** undefined: this measurement cannot be used (measure again). */
  readonly done: (measured: Measured | undefined) => void;
  readonly failed: (error: unknown) => void;
}

/** At most this many accounts share one measurement (one snapshot, one cut). */
const MAX_BATCH = 500;

/**
 * Rebuilds accounts missing from Redis. The rebuilds of one org share their measurements: one
 * runs at a time per org (one pool connection, one ledger snapshot, one cut of the org's
 * stream, each record parsed once), and every rebuild that arrives meanwhile waits for the
 * next, which starts when it ends (docs/decisions.md, 306). A month's start, when each product
 * user's first request rebuilds its period account, costs a few measurements per org, not one
 * per user.
 */
export class AccountRebuilder {
  /** Orgs measuring now, each with the rebuilds waiting for its next measurement. */
  private readonly waiting = new Map<string, Waiting[]>();

  constructor(private readonly parts: RebuildParts) {}

  /**
   * Installs `target` (with its credits) unless it is in Redis already: then leaves it
   * untouched, and loads its credits if they are not (they went, or an older instance
   * installed the account without them).
   */
  async rebuild(target: RebuildTarget): Promise<void> {
    const { unwritten } = this.parts;
    const observe = this.parts.observe ?? (() => undefined);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      // null: the account is in Redis (another rebuild installed it since it was found missing).
      const { listing, creditsLoaded } = await unwritten.listRebuild(
        target.orgId,
        target.key,
        target.credits?.keys.user_credits,
      );
      if (listing === null) {
        observe(target.kind, 'present', attempt);
        if (target.credits && !creditsLoaded) await this.loadCredits(target.credits);
        return;
      }
      const lastTry = attempt === MAX_ATTEMPTS - 1;
      const measured = await this.measured({
        orgId: target.orgId,
        account: { target, listing },
        credits: target.credits,
        lastTry,
      });
      // Installed (1), or present (0: another instance installed it since the cut, and the
      // user's credits are merged anyway, account-rebuild-user.lua).
      const outcome = measured && (await this.install(target, listing, measured));
      if (outcome !== undefined && outcome !== -1) {
        const installed = measured!.exact ? 'installed' : 'inexact';
        return observe(target.kind, outcome === 1 ? installed : 'present', attempt + 1);
      }
      await this.pause(attempt);
    }
    observe(target.kind, 'gave_up', MAX_ATTEMPTS);
    throw new AccountRebuildBusyError(
      `account ${target.key} not rebuilt: installs took its listing off during each of ${MAX_ATTEMPTS} measurements`,
    );
  }

  /**
   * Merges a user's credits into Redis (what is there stays), measured with the org's
   * rebuilds: for a currency other than the settlement one, or a user whose account is in
   * Redis and whose credits are not (rebuild).
   */
  async loadCredits(credits: CreditsTarget): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      const lastTry = attempt === MAX_ATTEMPTS - 1;
      const measured = await this.measured({ orgId: credits.orgId, credits, lastTry });
      if (measured) {
        await this.parts.scripts.creditsLoad(
          credits.keys,
          { ttl_ms: String(CREDITS_TTL_MS) },
          measured.grants,
        );
        return;
      }
      await this.pause(attempt);
    }
  }

  /** The account's install script's outcome: 1 installed, 0 present, -1 measure again. */
  private async install(
    target: RebuildTarget,
    listing: string,
    measured: Measured,
  ): Promise<number> {
    const { keys, scripts } = this.parts;
    const accountKeys = {
      account: target.key,
      expiries: keys.holdExpiries(target.key),
      rebuilds: keys.rebuilds(target.orgId),
    };
    const args = {
      field: target.field,
      amount_nano: measured.account!.amount.toString(),
      expire_at_ms: target.expireAtMs === null ? '' : String(target.expireAtMs),
      missed_at_cut: measured.account!.missedAtCut,
      generation: randomBytes(8).toString('hex'),
      listing_field: listingField(target.key),
      listing,
    };
    const outcome = target.credits
      ? await scripts.accountRebuildUser(
          Object.assign({}, accountKeys, target.credits.keys),
          Object.assign({}, args, { ttl_ms: String(CREDITS_TTL_MS) }),
          measured.grants,
        )
      : await scripts.accountRebuild(accountKeys, args);
    return (outcome as [number, string?])[0];
  }

  /** Joins the org's next measurement; undefined: it cannot be used (measure again). */
  private measured(rebuild: Omit<Waiting, 'done' | 'failed'>): Promise<Measured | undefined> {
    return new Promise((done, failed) => this.enqueue(Object.assign({ done, failed }, rebuild)));
  }

  private pause(attempt: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS * (attempt + 1)));
  }

  /**
   * Joins the org's next measurement: starts one now if none runs, else waits for the one
   * after the running one (whose snapshot may be older than this rebuild's listing).
   */
  private enqueue(rebuild: Waiting): void {
    const orgId = rebuild.orgId;
    const queued = this.waiting.get(orgId);
    if (queued) {
      queued.push(rebuild);
      return;
    }
    this.waiting.set(orgId, []);
    void this.measureInTurn(orgId, [rebuild]);
  }

  private async measureInTurn(orgId: string, first: Waiting[]): Promise<void> {
    for (let batch = first; batch.length > 0;) {
      const started = performance.now();
      try {
        await this.measure(orgId, batch);
      } catch (error) {
        // Those already answered keep their answer (a promise settles once).
        for (const rebuild of batch) rebuild.failed(error);
      }
      this.parts.observeMeasurement?.((performance.now() - started) / 1000);
      batch = this.waiting.get(orgId)!.splice(0, MAX_BATCH);
    }
    this.waiting.delete(orgId);
  }

  /**
   * One measurement for `batch`, all of one org: the stream's deletion count, a ledger
   * snapshot, then the cut (see the top of this file). Answers each rebuild: its amount, or
   * undefined when it must measure again.
   */
  private async measure(orgId: string, batch: readonly Waiting[]): Promise<void> {
    const { db, unwritten } = this.parts;
    // Read with a connection in hand, so that the window to the cut is a few round trips,
    // not a wait for the pool.
    let deletedBefore = Number.NaN;
    let afterwards: (() => Promise<void>) | undefined;
    await readOnlySnapshot(
      db,
      async (snapshot) => {
        const cut = await unwritten.cut(orgId, snapshot);
        // A record the writer committed after the snapshot and removed before the cut is in
        // neither. Measured again; the last time, installed anyway (`inexact`: short by what
        // the writer moved in that window, which `gw reconcile --repair` restores) rather than
        // refusing the org's requests with 503 while its traffic goes on.
        const exact = cut.deletions === deletedBefore;
        const usable: Array<{ rebuild: Waiting; missedAtCut?: string }> = [];
        for (const rebuild of batch) {
          // Listed before the cut was sent, an account is in it with this listing's token
          // unless an install took it off meanwhile (then the account is back, or was lost
          // again and listed anew: measure again).
          const key = rebuild.account?.target.key;
          const missedAtCut = key === undefined ? undefined : cut.missed.get(key);
          const listed =
            key === undefined ||
            (missedAtCut !== undefined &&
              cut.missed.get(listingField(key)) === rebuild.account!.listing);
          if (!listed || !(exact || rebuild.lastTry)) rebuild.done(undefined);
          else usable.push({ rebuild, missedAtCut });
        }
        if (usable.length === 0) return;
        const records = await unwritten.unwrittenAt(snapshot, cut);
        const targets = usable.flatMap(({ rebuild }) => rebuild.account?.target ?? []);
        const amounts = await ledgerAmounts(
          snapshot,
          orgId,
          targets.map((target) => target.amount),
          records,
        );
        const amountOf = new Map(targets.map((target, index) => [target, amounts[index]!]));
        const credits = usable.flatMap(({ rebuild }) => rebuild.credits ?? []);
        const answer = (grants: Map<CreditsTarget, LedgerGrant[]>): void => {
          for (const { rebuild, missedAtCut } of usable) {
            const target = rebuild.account?.target;
            rebuild.done({
              exact,
              account: target && { missedAtCut: missedAtCut!, amount: amountOf.get(target)! },
              grants: rebuild.credits ? grantTriples(grants.get(rebuild.credits) ?? []) : [],
            });
          }
        };
        if (exact || credits.length === 0) {
          answer(await grantsOf(snapshot, credits, records));
          return;
        }
        // Not exact: a record the writer moved between the snapshot and the cut is in
        // neither, and what it drew would stay on its grant, which nothing repairs (an
        // account's shortfall `gw reconcile --repair` restores). The grants are read in a
        // snapshot taken after the cut instead: every record settled before the cut is in it
        // or in the cut. Taken once this snapshot's work is done (its ROLLBACK may still be
        // running on the first connection, in the background).
        afterwards = async () => {
          answer(
            await readOnlySnapshot(db, async (after) =>
              grantsOf(after, credits, await unwrittenAtSnapshot(after, orgId, cut.entries)),
            ),
          );
        };
      },
      async () => {
        deletedBefore = await unwritten.deletions(orgId);
      },
    );
    await afterwards?.();
  }
}

/**
 * The ledger's grants of each of `credits` (read through `snapshot`), less what `unwritten`
 * drew on them: one statement per currency.
 */
async function grantsOf(
  snapshot: Parameters<typeof ledgerGrants>[0],
  credits: readonly CreditsTarget[],
  unwritten: Parameters<typeof ledgerGrants>[3],
): Promise<Map<CreditsTarget, LedgerGrant[]>> {
  const found = new Map<CreditsTarget, LedgerGrant[]>();
  for (const currency of new Set(credits.map((target) => target.currency))) {
    const ofCurrency = credits.filter((target) => target.currency === currency);
    const byUser = await ledgerGrants(
      snapshot,
      currency,
      [...new Set(ofCurrency.map((target) => target.productUserId))],
      unwritten,
    );
    for (const target of ofCurrency) found.set(target, byUser.get(target.productUserId) ?? []);
  }
  return found;
}

/** Grants as credits-merge.lua takes them: grant_id, remaining_nano, expires_at_ms triples. */
function grantTriples(grants: readonly LedgerGrant[]): string[] {
  return grants.flatMap((grant) => [
    grant.id,
    grant.remainingNano.toString(),
    String(grant.expiresAt ? grant.expiresAt.getTime() : NEVER_EXPIRES_MS),
  ]);
}
