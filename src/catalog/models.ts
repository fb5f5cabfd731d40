// The model catalogue: which vendor serves a model id and what its tokens cost. Loaded from
// Postgres at boot and refreshed in the background; lookups on the hot path are a Map get.
import type { DbPool } from '../db/pool.js';
import { tokenPriceFromDecimal, type TokenPrice } from '../money.js';
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
  /** What the vendor charges per token. */
  readonly inputCost: TokenPrice;
  readonly outputCost: TokenPrice;
  /** What gw sells a token for: sell_cost, charged against caps, allowances and the wallet. */
  readonly inputPrice: TokenPrice;
  readonly outputPrice: TokenPrice;
  readonly maxOutputTokens: number;
  readonly supportsTools: boolean;
}

interface ModelRow {
  id: string;
  vendor: Vendor;
  upstream_model: string;
  input_cost_per_token: string;
  output_cost_per_token: string;
  input_price_per_token: string;
  output_price_per_token: string;
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
              input_price_per_token::text, output_price_per_token::text, max_output_tokens,
              supports_tools
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
        inputCost: tokenPriceFromDecimal(row.input_cost_per_token),
        outputCost: tokenPriceFromDecimal(row.output_cost_per_token),
        inputPrice: tokenPriceFromDecimal(row.input_price_per_token),
        outputPrice: tokenPriceFromDecimal(row.output_price_per_token),
        maxOutputTokens: row.max_output_tokens,
        supportsTools: row.supports_tools,
      });
    }
    this.models = next;
  }
}

/** Does a model policy (patterns like 'vendor_b/*' or exact ids) allow this model id? */
export function modelPolicyAllows(policy: readonly string[], modelId: string): boolean {
  for (const pattern of policy) {
    if (pattern === '*' || pattern === modelId) return true;
    if (pattern.endsWith('/*') && modelId.startsWith(pattern.slice(0, -1))) return true;
  }
  return false;
}
