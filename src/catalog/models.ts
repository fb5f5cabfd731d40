// The model catalogue: which vendor serves a model id and what its tokens cost. Loaded from
// Postgres at boot and refreshed in the background; lookups on the hot path are a Map get.
import type { DbPool } from '../db/pool.js';
import { costNano, tokenPriceFromDecimal, type TokenPrice } from '../money.js';
import type { TokenUsage } from '../protocols/common/usage.js';
import type { Provider } from '../providers/common/provider.js';

/** A provider's id (src/providers/registry.ts, or a provider the gateway was started with). */
export type Vendor = string;

export interface CatalogModel {
  /** '<vendor>/<model>' */
  readonly id: string;
  readonly vendor: Vendor;
  /** The provider that serves it: its wire protocol builds the upstream call. */
  readonly provider: Provider;
  /** The vendor's own name for it. */
  readonly upstreamModel: string;
  /** What the vendor charges per token: vendor_cost. */
  readonly cost: TokenRates;
  /** What gw sells a token for: sell_cost, charged against caps, allowances and the wallet. */
  readonly price: TokenRates;
  readonly maxOutputTokens: number;
  readonly supportsTools: boolean;
}

/** A per-token rate for each kind of token a vendor bills. */
export interface TokenRates {
  readonly input: TokenPrice;
  readonly output: TokenPrice;
  /** Prompt tokens written to the vendor's prompt cache (the input's rate unless set). */
  readonly cacheWrite: TokenPrice;
  /** Prompt tokens read from the vendor's prompt cache (the input's rate unless set). */
  readonly cacheRead: TokenPrice;
}

/**
 * What some usage costs at these rates, in nano-units (rounded up once): the prompt's cache
 * parts at their own rates, the rest of it at the input's (decision 324).
 */
export function usageCostNano(usage: TokenUsage, rates: TokenRates): bigint {
  const uncached = Math.max(0, usage.inputTokens - usage.cacheWriteTokens - usage.cacheReadTokens);
  return costNano(
    [uncached, rates.input],
    [usage.cacheWriteTokens, rates.cacheWrite],
    [usage.cacheReadTokens, rates.cacheRead],
    [usage.outputTokens, rates.output],
  );
}

interface ModelRow {
  id: string;
  vendor: Vendor;
  upstream_model: string;
  input_cost_per_token: string;
  output_cost_per_token: string;
  input_price_per_token: string;
  output_price_per_token: string;
  cache_write_cost_per_token: string | null;
  cache_read_cost_per_token: string | null;
  cache_write_price_per_token: string | null;
  cache_read_price_per_token: string | null;
  max_output_tokens: number;
  supports_tools: boolean;
}

export class ModelCatalog {
  private models = new Map<string, CatalogModel>();

  private readonly providers: ReadonlyMap<string, Provider>;

  /**
   * `routableProviders`: the providers the gateway can reach; other vendors' models are left
   * out (they answer gw_unsupported_model and are not listed).
   */
  constructor(
    private readonly db: DbPool,
    routableProviders: readonly Provider[],
  ) {
    this.providers = new Map(routableProviders.map((provider) => [provider.id, provider]));
  }

  get(modelId: string): CatalogModel | undefined {
    return this.models.get(modelId);
  }

  list(): CatalogModel[] {
    return [...this.models.values()];
  }

  async refresh(): Promise<void> {
    const { rows } = await this.db.query<ModelRow>(
      `SELECT id, vendor, upstream_model, input_cost_per_token::text, output_cost_per_token::text,
              input_price_per_token::text, output_price_per_token::text,
              cache_write_cost_per_token::text, cache_read_cost_per_token::text,
              cache_write_price_per_token::text, cache_read_price_per_token::text,
              max_output_tokens, supports_tools
         FROM models WHERE enabled ORDER BY id`,
    );
    const next = new Map<string, CatalogModel>();
    for (const row of rows) {
      const provider = this.providers.get(row.vendor);
      if (!provider) continue;
      next.set(row.id, {
        id: row.id,
        vendor: row.vendor,
        provider,
        upstreamModel: row.upstream_model,
        cost: tokenRates(
          row.input_cost_per_token,
          row.output_cost_per_token,
          row.cache_write_cost_per_token,
          row.cache_read_cost_per_token,
        ),
        price: tokenRates(
          row.input_price_per_token,
          row.output_price_per_token,
          row.cache_write_price_per_token,
          row.cache_read_price_per_token,
        ),
        maxOutputTokens: row.max_output_tokens,
        supportsTools: row.supports_tools,
      });
    }
    this.models = next;
  }
}

/** Rates from decimal per-token prices; a cache rate left unset (NULL) is the input's. */
export function tokenRates(
  input: string,
  output: string,
  cacheWrite: string | null = null,
  cacheRead: string | null = null,
): TokenRates {
  const inputRate = tokenPriceFromDecimal(input);
  return {
    input: inputRate,
    output: tokenPriceFromDecimal(output),
    cacheWrite: cacheWrite === null ? inputRate : tokenPriceFromDecimal(cacheWrite),
    cacheRead: cacheRead === null ? inputRate : tokenPriceFromDecimal(cacheRead),
  };
}

/** Does a model policy (patterns like 'vendor_b/*' or exact ids) allow this model id? */
export function modelPolicyAllows(policy: readonly string[], modelId: string): boolean {
  for (const pattern of policy) {
    if (pattern === '*' || pattern === modelId) return true;
    if (pattern.endsWith('/*') && modelId.startsWith(pattern.slice(0, -1))) return true;
  }
  return false;
}
