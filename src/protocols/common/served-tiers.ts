// How a vendor says it served a call (its service tier, speed, geography), read against the
// standard service gw's catalogue prices. Decision 332 refuses a request that names another
// tier, but a request cannot show the vendor account's own default (a project's service tier,
// a workspace's default geography), and the vendor bills the tier it served: the answer names
// it, and a call served at a tier gw does not price is counted and logged (decision 342). The
// charge stays the catalogue's. Each protocol lists the fields its vendor reports.

/** A field of a vendor's answer that names how it served the call. */
export interface ServedTierField {
  /** The field's name (in the answer, or in its usage object). */
  readonly field: string;
  /** The values gw's prices cover; absent and null mean the same (the vendor named none). */
  readonly standard: readonly string[];
  /** Other values known by name, each its own metric label; anything else is `other`. */
  readonly known: readonly string[];
}

/** A tier a vendor reported serving a call at that gw's prices do not cover. */
export interface UnpricedTier {
  /** The field that named it (`service_tier`, `speed`, `inference_geo`). */
  readonly field: string;
  /** The vendor's value, cut to REPORTED_MAX_CHARS; its JSON type when it is not text. */
  readonly reported: string;
  /** The metric label: the value when its field knows it, else `other` (a bounded set). */
  readonly tier: string;
}

/** A vendor's value is its text, not ours: what a log line repeats of it is bounded. */
const REPORTED_MAX_CHARS = 40;

/** The label of a value the field does not know by name. */
export const OTHER_TIER = 'other';

/** How `value` of `rule`'s field was served, when not at a tier gw prices; else undefined. */
function unpricedTier(rule: ServedTierField, value: unknown): UnpricedTier | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    return { field: rule.field, reported: `(${typeof value})`, tier: OTHER_TIER };
  }
  if (rule.standard.includes(value)) return undefined;
  return {
    field: rule.field,
    reported: value.slice(0, REPORTED_MAX_CHARS),
    tier: rule.known.includes(value) ? value : OTHER_TIER,
  };
}

/**
 * The tiers `source` (an answer or its usage object: any JSON value) names that gw's prices do
 * not cover, in the order of `rules`; undefined when it names none (the usual answer: nothing
 * is allocated for it).
 */
export function unpricedTiers(
  rules: readonly ServedTierField[],
  source: unknown,
): UnpricedTier[] | undefined {
  if (typeof source !== 'object' || source === null || Array.isArray(source)) return undefined;
  let found: UnpricedTier[] | undefined;
  for (const rule of rules) {
    const tier = unpricedTier(rule, (source as Record<string, unknown>)[rule.field]);
    if (tier) (found ??= []).push(tier);
  }
  return found;
}

/**
 * The tiers a stream names, event by event: for each field, the last value an event named (an
 * event that does not name it, or names it null, leaves the one before: vendor_a's
 * `message_delta` may send `"service_tier": null` after `message_start` named the tier, and
 * null means the vendor named none, not that it served the standard tier: decision 354).
 */
export class ServedTierTracker {
  private readonly named: Record<string, unknown> = {};

  constructor(private readonly rules: readonly ServedTierField[]) {}

  /** Notes what `source` (an event's usage object, a chunk: already parsed) names. */
  observe(source: Readonly<Record<string, unknown>>): void {
    for (const rule of this.rules) {
      const value = source[rule.field];
      if (value !== undefined && value !== null) this.named[rule.field] = value;
    }
  }

  /** The tiers named so far that gw's prices do not cover (undefined: none). */
  get unpricedTiers(): UnpricedTier[] | undefined {
    return unpricedTiers(this.rules, this.named);
  }
}
