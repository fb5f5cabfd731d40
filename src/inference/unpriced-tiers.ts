// A call the vendor says it served at a tier gw's prices do not cover (a priority or flex tier,
// a fast speed, a pinned geography: decision 342), usually because the vendor account defaults
// to it: counted by provider, field and tier (gw_vendor_tier_mismatches_total) and logged once
// with who served it, for an operator to set the account back. Its charge is the catalogue's,
// as for every call: what the vendor billed beyond (or below) it shows only here.
import type { Logger } from '../log.js';
import type { UnpricedTier } from '../protocols/common/served-tiers.js';
import type { Admission } from './admission.js';

/** Counts the tiers calls were served at that gw does not price (the metrics). */
export interface UnpricedTierCounter {
  unpricedTierServed(provider: string, field: string, tier: string): void;
}

export interface UnpricedTierPorts {
  readonly logger: Pick<Logger, 'warn'>;
  readonly unpricedTierCounter?: UnpricedTierCounter;
}

/** Who served the call: its provider, and its BYOK credential (null: the system route). */
export interface ServedCall {
  readonly admission: Pick<Admission, 'requestId' | 'identity' | 'model'>;
  readonly provider: string;
  readonly credentialId: string | null;
}

/**
 * Counts each tier the vendor named and logs one line for the call: ids and the vendor's
 * values only (never the prompt, the answer or a secret).
 */
export function reportUnpricedTiers(
  ports: UnpricedTierPorts,
  call: ServedCall,
  tiers: readonly UnpricedTier[],
): void {
  const reported: Record<string, string> = {};
  for (const tier of tiers) {
    ports.unpricedTierCounter?.unpricedTierServed(call.provider, tier.field, tier.tier);
    reported[tier.field] = tier.reported;
  }
  const { admission, credentialId } = call;
  ports.logger.warn(
    {
      requestId: admission.requestId,
      orgId: admission.identity.orgId,
      model: admission.model.id,
      provider: call.provider,
      route: credentialId ? 'byok' : 'system',
      credentialId,
      reported,
    },
    'vendor served the call at a tier gw does not price; charged at the catalogue rates',
  );
}
