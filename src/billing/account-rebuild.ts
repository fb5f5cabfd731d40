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
import { randomBytes } from 'node:crypto';
import { readOnlySnapshot, type DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import { listingField, type UnwrittenUsage } from '../ledger/unwritten-usage.js';
import { ledgerAmounts, type LedgerAmount } from './ledger-amounts.js';

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
}

export interface RebuildParts {
  readonly db: DbPool;
  readonly keys: RedisKeys;
  readonly scripts: Pick<RedisScripts, 'accountRebuild'>;
  readonly unwritten: UnwrittenUsage;
  /** Hears how each rebuild ended (the gateway counts them: gw_account_rebuilds_total). */
  readonly observe?: RebuildObserver | undefined;
  /** Hears how long each measurement took, in seconds (gw_account_rebuild_measurement_seconds). */
  readonly observeMeasurement?: ((seconds: number) => void) | undefined;
}

/** One measurement of one account: its amount at the cut, and the cut's `rebuilds` field. */
interface Measured {
  readonly missedAtCut: string;
  readonly exact: boolean;
  readonly amount: bigint;
}

/** A rebuild waiting for its org's next measurement. */
interface Waiting {
  readonly target: RebuildTarget;
  readonly listing: string;
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

  /** Installs `target` unless it is in Redis already (then leaves it untouched). */
  async rebuild(target: RebuildTarget): Promise<void> {
    const { keys, scripts, unwritten } = this.parts;
    const observe = this.parts.observe ?? (() => undefined);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      // null: the account is in Redis (another rebuild installed it since it was found missing).
      const listing = await unwritten.listRebuild(target.orgId, target.key);
      if (listing === null) return observe(target.kind, 'present', attempt);
      const lastTry = attempt === MAX_ATTEMPTS - 1;
      const measured = await new Promise<Measured | undefined>((done, failed) =>
        this.enqueue({ target, listing, lastTry, done, failed }),
      );
      if (measured) {
        const outcome = (await scripts.accountRebuild(
          {
            account: target.key,
            expiries: keys.holdExpiries(target.key),
            rebuilds: keys.rebuilds(target.orgId),
          },
          {
            field: target.field,
            amount_nano: measured.amount.toString(),
            expire_at_ms: target.expireAtMs === null ? '' : String(target.expireAtMs),
            missed_at_cut: measured.missedAtCut,
            generation: randomBytes(8).toString('hex'),
            listing_field: listingField(target.key),
            listing,
          },
        )) as [number, string?];
        if (outcome[0] !== -1) {
          const installed = measured.exact ? 'installed' : 'inexact';
          return observe(target.kind, outcome[0] === 1 ? installed : 'present', attempt + 1);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS * (attempt + 1)));
    }
    observe(target.kind, 'gave_up', MAX_ATTEMPTS);
    throw new AccountRebuildBusyError(
      `account ${target.key} not rebuilt: installs took its listing off during each of ${MAX_ATTEMPTS} measurements`,
    );
  }

  /**
   * Joins the org's next measurement: starts one now if none runs, else waits for the one
   * after the running one (whose snapshot may be older than this rebuild's listing).
   */
  private enqueue(rebuild: Waiting): void {
    const orgId = rebuild.target.orgId;
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
    await readOnlySnapshot(
      db,
      async (snapshot) => {
        const cut = await unwritten.cut(orgId, snapshot);
        // A record the writer committed after the snapshot and removed before the cut is in
        // neither. Measured again; the last time, installed anyway (`inexact`: short by what
        // the writer moved in that window, which `gw reconcile --repair` restores) rather than
        // refusing the org's requests with 503 while its traffic goes on.
        const exact = cut.deletions === deletedBefore;
        const usable: Array<{ rebuild: Waiting; missedAtCut: string }> = [];
        for (const rebuild of batch) {
          // Listed before the cut was sent, the account is in it with this listing's token
          // unless an install took it off meanwhile (then the account is back, or was lost
          // again and listed anew: measure again).
          const key = rebuild.target.key;
          const missedAtCut = cut.missed.get(key);
          const listed = cut.missed.get(listingField(key)) === rebuild.listing;
          if (missedAtCut === undefined || !listed || !(exact || rebuild.lastTry)) {
            rebuild.done(undefined);
          } else {
            usable.push({ rebuild, missedAtCut });
          }
        }
        if (usable.length === 0) return;
        const records = await unwritten.unwrittenAt(snapshot, cut);
        const amounts = await ledgerAmounts(
          snapshot,
          orgId,
          usable.map(({ rebuild }) => rebuild.target.amount),
          records,
        );
        for (const [index, { rebuild, missedAtCut }] of usable.entries()) {
          rebuild.done({ missedAtCut, exact, amount: amounts[index]! });
        }
      },
      async () => {
        deletedBefore = await unwritten.deletions(orgId);
      },
    );
  }
}
