// A call the vendor says it served at a tier gw's prices do not cover (a priority or flex tier,
// a fast speed, a pinned geography: decision 342), usually because the vendor account defaults
// to it: counted by provider, field and tier (gw_vendor_tier_mismatches_total) and logged with
// who served it, for an operator to set the account back. Its charge is the catalogue's, as
// for every call: what the vendor billed beyond (or below) it shows only here. An account that
// defaults to such a tier serves every call so: the log names each org, route and tier once a
// minute, with the calls left out since its last line (decision 346); the counter counts all.
import type { UsageRecord } from '../ledger/usage-record.js';
import type { Logger } from '../log.js';
import type { UnpricedTier } from '../protocols/common/served-tiers.js';
import type { Admission } from './admission.js';

/** Counts the tiers calls were served at that gw does not price (the metrics). */
export interface UnpricedTierCounter {
  unpricedTierServed(provider: string, route: ServingRoute, field: string, tier: string): void;
}

/** Whose vendor account served the call: the gateway's (system) or the org's own (byok). */
export type ServingRoute = UsageRecord['route'];

export interface UnpricedTierPorts {
  readonly unpricedTierCounter?: UnpricedTierCounter;
  readonly unpricedTierLog: UnpricedTierLog;
}

/** Who served the call: its provider, and its BYOK credential (null: the system route). */
export interface ServedCall {
  readonly admission: Pick<Admission, 'requestId' | 'identity' | 'model'>;
  readonly provider: string;
  readonly credentialId: string | null;
}

const servingRoute = (call: ServedCall): ServingRoute => (call.credentialId ? 'byok' : 'system');

/** Counts each tier the vendor named, and logs the call unless one like it was just logged. */
export function reportUnpricedTiers(
  ports: UnpricedTierPorts,
  call: ServedCall,
  tiers: readonly UnpricedTier[],
): void {
  const route = servingRoute(call);
  for (const tier of tiers) {
    ports.unpricedTierCounter?.unpricedTierServed(call.provider, route, tier.field, tier.tier);
  }
  ports.unpricedTierLog.served(call, tiers);
}

/** One line per org, route and tiers at most this often. */
export const UNPRICED_TIER_LOG_INTERVAL_MS = 60_000;
/** Kinds of call remembered; past it, the one logged longest ago is forgotten. */
export const UNPRICED_TIER_KINDS_MAX = 10_000;

/**
 * The warning for calls served at an unpriced tier: ids and the vendor's values only (never
 * the prompt, the answer or a secret), once per interval for calls of one org, provider,
 * credential and set of tiers.
 */
export class UnpricedTierLog {
  /** By kind of call: when its last line was written, and the calls left out since. */
  private readonly kinds = new Map<string, { loggedAtMs: number; leftOut: number }>();

  constructor(
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly nowMs: () => number,
    private readonly intervalMs = UNPRICED_TIER_LOG_INTERVAL_MS,
    private readonly kindsMax = UNPRICED_TIER_KINDS_MAX,
  ) {}

  served(call: ServedCall, tiers: readonly UnpricedTier[]): void {
    const { admission, credentialId } = call;
    const kind = [
      call.provider,
      credentialId ?? '',
      admission.identity.orgId,
      ...tiers.map((tier) => `${tier.field}=${tier.tier}`),
    ].join('\n');
    const nowMs = this.nowMs();
    const last = this.kinds.get(kind);
    if (last !== undefined && nowMs - last.loggedAtMs < this.intervalMs) {
      last.leftOut += 1;
      return;
    }
    // Written again last, so the first kind in the map is the one logged longest ago.
    this.kinds.delete(kind);
    this.kinds.set(kind, { loggedAtMs: nowMs, leftOut: 0 });
    if (this.kinds.size > this.kindsMax) this.kinds.delete(this.kinds.keys().next().value!);
    const reported: Record<string, string> = {};
    for (const tier of tiers) reported[tier.field] = tier.reported;
    this.logger.warn(
      {
        requestId: admission.requestId,
        orgId: admission.identity.orgId,
        model: admission.model.id,
        provider: call.provider,
        route: servingRoute(call),
        credentialId,
        reported,
        ...(last !== undefined && last.leftOut > 0 && { similarCallsNotLogged: last.leftOut }),
      },
      'vendor served the call at a tier gw does not price; charged at the catalogue rates',
    );
  }
}
